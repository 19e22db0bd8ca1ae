"""How a web process schedules its stream reads: they wait for creates under way (for a
bounded time, stream/creates_first.py), and readers at one point of one response share a
read only where it cannot have missed what woke them (stream/reader.py)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from django.test import override_settings

from responses_app.stream import creates_first, event_log, reader
from responses_app.stream.event_log import Frames

pytestmark = pytest.mark.core


def test_a_stream_read_waits_for_the_creates_under_way():
    async def scenario() -> list[str]:
        order: list[str] = []

        async def create(seconds: float) -> None:
            with creates_first.create_under_way():
                await asyncio.sleep(seconds)
                order.append("create done")

        async def stream_read() -> None:
            await asyncio.sleep(0.01)  # the creates are under way
            await creates_first.before_stream_read()
            order.append("read")

        await asyncio.gather(create(0.1), create(0.2), stream_read())
        return order

    with override_settings(STREAM_READS_YIELD_S=5.0):
        assert asyncio.run(scenario()) == ["create done", "create done", "read"]


def test_a_steady_stream_of_creates_delays_a_read_by_at_most_the_yield():
    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        with creates_first.create_under_way():
            started = loop.time()
            await creates_first.before_stream_read()
            return loop.time() - started

    with override_settings(STREAM_READS_YIELD_S=0.2):
        waited = asyncio.run(scenario())
    assert 0.18 <= waited < 1.0


def test_no_create_no_wait():
    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        started = loop.time()
        await creates_first.before_stream_read()
        return loop.time() - started

    assert asyncio.run(scenario()) < 0.05


class ControlledReads:
    """event_log.frames_after replaced by reads that return what the test says, when it says."""

    def __init__(self) -> None:
        self.calls = 0
        self.release = threading.Event()
        self.answers: list[Frames] = []

    def __call__(self, response_id: str, after: int, max_bytes: int = 0) -> Frames:
        self.calls += 1
        answer = self.answers.pop(0)
        if self.calls == 1:
            self.release.wait(5)
        return answer


@pytest.fixture
def reads(monkeypatch, db) -> ControlledReads:
    """(``db``: a stream thread checks its connection before each read.)"""
    controlled = ControlledReads()
    monkeypatch.setattr(event_log, "frames_after", controlled)
    return controlled


def test_a_reader_joining_a_read_begun_before_it_asked_reads_again_after_its_frames(reads):
    """The joined read may predate the commit that woke the joiner: its frames are sent,
    marked ``more``, so that the joiner reads again at once rather than wait for a ring
    that already came."""
    reads.answers = [Frames(b"event: a\n\n", 5, False)]

    async def scenario() -> tuple[Frames, Frames]:
        first = asyncio.ensure_future(reader._frames_after("resp_shared", 4))
        await asyncio.sleep(0.1)  # the first read is running in its thread
        joined = asyncio.ensure_future(reader._frames_after("resp_shared", 4))
        await asyncio.sleep(0.05)
        reads.release.set()
        return await first, await joined

    own, joined = asyncio.run(scenario())
    assert reads.calls == 1  # one read for both
    assert (own.data, own.more) == (b"event: a\n\n", False)
    assert (joined.data, joined.last_sequence_number, joined.more) == (b"event: a\n\n", 5, True)


def test_a_reader_joining_a_read_begun_before_it_asked_does_not_believe_its_empty_answer(reads):
    reads.answers = [Frames(b"", 4, False), Frames(b"event: b\n\n", 5, False)]

    async def scenario() -> Frames:
        first = asyncio.ensure_future(reader._frames_after("resp_shared", 4))
        await asyncio.sleep(0.1)
        joined = asyncio.ensure_future(reader._frames_after("resp_shared", 4))
        await asyncio.sleep(0.05)
        reads.release.set()
        await first
        return await joined

    joined = asyncio.run(scenario())
    assert reads.calls == 2  # the joiner read on its own
    assert (joined.data, joined.more) == (b"event: b\n\n", False)
