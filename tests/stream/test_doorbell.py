"""The doorbell's hub (stream/doorbell.py) against the test Redis: one subscription per
channel however many listeners, a listener subscribed before ``listening`` yields, the
channel given up with its last listener, and a connection lost and found again."""

from __future__ import annotations

import asyncio

import pytest
import redis
from django.conf import settings

from responses_app.stream import doorbell

pytestmark = pytest.mark.core


def subscribers(response_id: str) -> int:
    channel = doorbell.channel_name(response_id)
    return dict(redis.Redis.from_url(settings.REDIS_URL).pubsub_numsub(channel))[channel.encode()]


async def rung(listener: doorbell.Listener, within: float = 2.0) -> bool:
    """Whether the listener's wait ended by a ring rather than its timeout."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    await listener.wait(within)
    return loop.time() - started < within * 0.9


def test_readers_of_one_response_share_one_subscription_and_are_subscribed_when_listening_yields():
    async def scenario() -> None:
        async with doorbell.listening("resp_bell_a") as first, doorbell.listening("resp_bell_a") as second, \
                doorbell.listening("resp_bell_b") as other:
            assert subscribers("resp_bell_a") == 1 and subscribers("resp_bell_b") == 1
            # No sleep: listening() returned only once Redis confirmed the SUBSCRIBE.
            doorbell.ring("resp_bell_a", 7)
            assert await rung(first) and await rung(second)
            assert not await rung(other, within=0.3)
            async with doorbell.listening("resp_bell_c") as late:
                doorbell.ring("resp_bell_c", 1)
                assert await rung(late)
            await asyncio.sleep(0.2)  # the UNSUBSCRIBE is sent, not waited for
            assert subscribers("resp_bell_c") == 0 and subscribers("resp_bell_a") == 1
        await asyncio.sleep(0.2)
        assert subscribers("resp_bell_a") == 0 and subscribers("resp_bell_b") == 0
        assert asyncio.get_running_loop() not in doorbell._hubs  # the last listener closed the hub

    asyncio.run(scenario())


def test_a_ring_during_a_read_is_not_lost():
    async def scenario() -> None:
        async with doorbell.listening("resp_bell_d") as listener:
            doorbell.ring("resp_bell_d", 3)  # while its reader would be reading the database
            await asyncio.sleep(0.2)
            assert await rung(listener, within=1.0)
            assert not await rung(listener, within=0.3)  # one ring, one wake-up

    asyncio.run(scenario())


def test_a_lost_connection_is_polled_through_and_subscribed_again(monkeypatch):
    monkeypatch.setattr(doorbell, "RESUBSCRIBE_S", 0.5)
    monkeypatch.setattr(doorbell, "POLL_INTERVAL_S", 0.2)

    async def scenario() -> None:
        async with doorbell.listening("resp_bell_e") as listener:
            redis.Redis.from_url(settings.REDIS_URL).client_kill_filter(_type="pubsub")
            await listener.wait(1.0)  # woken by the loss, so that its reader reads now
            assert subscribers("resp_bell_e") == 0
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 5
            while subscribers("resp_bell_e") == 0 and loop.time() < deadline:
                await listener.wait(0.3)  # polls meanwhile; the next wait after RESUBSCRIBE_S reconnects
            assert subscribers("resp_bell_e") == 1
            doorbell.ring("resp_bell_e", 9)
            assert await rung(listener)

    asyncio.run(scenario())


def test_a_hub_that_closed_does_not_take_the_next_hub_with_it():
    async def scenario() -> None:
        loop = asyncio.get_running_loop()
        stale = doorbell.Listener("resp_bell_f")  # made while its hub was the loop's
        async with doorbell.listening("resp_bell_g"):
            pass  # that hub closes
        async with doorbell.listening("resp_bell_h") as current:
            assert doorbell._hubs[loop] is current._hub is not stale._hub
            await stale._hub.join(stale)
            await stale._hub.leave(stale)  # the old hub's last listener leaves
            assert doorbell._hubs[loop] is current._hub
            doorbell.ring("resp_bell_h", 1)
            assert await rung(current)

    asyncio.run(scenario())


def test_every_task_of_a_hub_ends_with_it_a_lost_connections_reader_too(monkeypatch):
    monkeypatch.setattr(doorbell, "RESUBSCRIBE_S", 0.2)

    async def scenario() -> None:
        async with doorbell.listening("resp_bell_i") as listener:
            first_reader = listener._hub._reader
            redis.Redis.from_url(settings.REDIS_URL).client_kill_filter(_type="pubsub")
            await listener.wait(1.0)
            await asyncio.sleep(0.3)
            await listener.wait(0.3)  # reconnects: a new reader
            assert first_reader.done() and listener._hub._reader is not first_reader
        await asyncio.sleep(0.2)
        # Nothing the hubs started is left pending for the garbage collector to find.
        assert not doorbell._tasks

    asyncio.run(scenario())


def pushed(first: int, last: int, ends: bool = False) -> doorbell.Pushed:
    return doorbell.Pushed(first, last, ends, b"".join(b"event: e\ndata: %d\n\n" % n for n in range(first, last + 1)))


def test_a_ring_brings_its_commits_frames_to_every_listener():
    async def scenario() -> None:
        async with doorbell.listening("resp_bell_p") as first, doorbell.listening("resp_bell_p") as second:
            doorbell.ring("resp_bell_p", 4, pushed(3, 4, ends=True))
            assert await rung(first)
            for listener in (first, second):
                assert listener.take_after(2) == pushed(3, 4, ends=True)
                assert listener.take_after(4) is None  # taken once

    asyncio.run(scenario())


def test_a_listener_gives_only_frames_that_continue_the_cursor():
    async def scenario() -> None:
        async with doorbell.listening("resp_bell_q") as listener:
            for chunk in (pushed(0, 2), pushed(3, 5), pushed(6, 9)):
                listener.ring(chunk)
            # Commits the reader has already read are dropped; the next ones come together.
            assert listener.take_after(2) == pushed(3, 9)
            listener.ring(pushed(13, 15))  # 10..12 were missed: the reader reads the database
            assert listener.take_after(9) is None
            assert listener.take_after(12) == pushed(13, 15)
            listener.ring(doorbell.Pushed(16, 16, False, b"x" * (doorbell.MAX_PUSHED_BYTES + 1)))
            assert listener.take_after(15) is None  # a reader that falls behind reads the database

    asyncio.run(scenario())


def test_a_ring_without_frames_only_wakes():
    assert doorbell.Pushed.parse(b"17") is None
    assert doorbell.Pushed.parse(pushed(3, 4).message()) == pushed(3, 4)
