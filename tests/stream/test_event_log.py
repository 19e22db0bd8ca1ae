"""The event log's two forms (stream/event_log.py): rows while a response runs, one packed
block once it ends. A reader that crosses the switch neither misses nor repeats an event,
and the block is exactly the rows it replaced."""

from __future__ import annotations

import asyncio
import time

import pytest

from responses_app import tasks
from responses_app.dispatch import task_queue
from responses_app.harmony.parser import ContentDelta, MessageFinished, MessageStarted
from responses_app.lib.asyncdb import db
from responses_app.models import EventLog, Response, ResponseEvent, ResponseStatus
from responses_app.services.cancel import delete_response
from responses_app.services.create import create_response
from responses_app.services.ended import end_response
from responses_app.stream import event_log
from responses_app.stream.builder import EventBuilder
from responses_app.stream.reader import RESPONSE_DELETED, follow_frames
from responses_app.stream.store import save_batch
from responses_app.tenancy.api_keys import create_api_key
from responses_app.validation.create import parse_create_request
from responses_app.worker.claim import claim
from tests.helpers import wait_until

# Committed rows, never truncated (the live tests' tenants share this database): the
# readers run in the database threads of responses_app/lib/asyncdb.py.
pytestmark = [pytest.mark.usefixtures("db_access"), pytest.mark.core]
OWNER = "test-worker"
USAGE = {"input_tokens": 1, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}, "output_tokens": 1,
         "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 2}


@pytest.fixture(autouse=True)
def no_broker(monkeypatch) -> None:
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: None)


def running_response(deltas: int) -> tuple[Response, EventBuilder]:
    """A claimed response whose worker has committed a message with ``deltas`` deltas."""
    tenant = create_api_key("switch")[0].tenant
    created = create_response(tenant, parse_create_request({"model": "echo", "input": "hi"}))
    response = claim(created.pk, OWNER)
    builder = EventBuilder(response, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    builder.apply(MessageStarted(kind="message", recipient=None, name=None))
    for n in range(deltas):
        builder.apply(ContentDelta(text=f"word{n} "))
    save_batch(response, OWNER, builder)
    return response, builder


def finish(response: Response, builder: EventBuilder) -> None:
    builder.apply(ContentDelta(text="done."))
    builder.apply(MessageFinished(kind="message", recipient=None, name=None, text=""))
    assert end_response(response.pk, ResponseStatus.COMPLETED, builder=builder, lease_owner=OWNER,
                        usage=USAGE)


def frames_in(chunks: list[bytes | None]) -> list[bytes]:
    return [frame + b"\n\n" for chunk in chunks if chunk for frame in chunk.split(b"\n\n") if frame]


def test_a_reader_following_live_crosses_the_switch_to_the_packed_block_without_a_gap_or_a_repeat():
    response, builder = running_response(deltas=20)

    async def follow() -> list[bytes | None]:
        reader = follow_frames(response.pk, -1)
        chunks = [await reader.__anext__()]  # the rows so far
        await db(finish)(response, builder)  # ends it, and asks for it to be packed
        assert await db(event_log.pack_many)([response.pk]) == 1  # the maintenance queue's task
        chunks += [chunk async for chunk in reader]  # the rest, from the block
        return chunks

    received = frames_in(asyncio.run(follow()))
    packed = event_log.packed_log(response.pk)
    assert not ResponseEvent.objects.filter(response_id=response.pk).exists()
    assert received == packed.frames(-1, packed.last_sequence_number)
    assert len(received) == Response.objects.get(pk=response.pk).last_sequence_number + 1


def test_the_packed_block_gives_what_the_rows_gave_after_every_sequence_number():
    response, builder = running_response(deltas=30)
    finish_without_packing(response, builder)
    last = Response.objects.get(pk=response.pk).last_sequence_number
    from_rows = [event_log.frames_after(response.pk, k) for k in range(-1, last + 1)]
    rows = event_log.events(response.pk)

    assert event_log.pack(response.pk)
    assert not event_log.pack(response.pk)  # once
    assert [event_log.frames_after(response.pk, k) for k in range(-1, last + 1)] == from_rows
    assert event_log.events(response.pk) == rows
    assert from_rows[-1] == event_log.Frames(b"", last, False)  # nothing after the terminal event
    stored = EventLog.objects.get(response_id=response.pk)
    assert stored.event_count == last + 1 and len(stored.frames) < stored.raw_bytes


def finish_without_packing(response: Response, builder: EventBuilder) -> None:
    from django.test import override_settings

    with override_settings(EVENT_LOG_PACKING=False):
        finish(response, builder)
    assert ResponseEvent.objects.filter(response_id=response.pk).exists()


def test_a_running_response_is_not_packed_and_the_sweep_packs_what_was_left():
    # The tests before left finished responses for the maintenance queue: packed first.
    while event_log.pack_unpacked():
        pass
    running, _ = running_response(deltas=3)
    left, builder = running_response(deltas=3)
    finish_without_packing(left, builder)

    assert not event_log.pack(running.pk)
    # At least the one left here: a response the pytest worker's live stack ended a moment ago
    # may be waiting for its own packing too (the database is shared).
    assert event_log.pack_unpacked() >= 1
    assert EventLog.objects.filter(response_id=left.pk).exists()
    assert not ResponseEvent.objects.filter(response_id=left.pk).exists()
    assert not EventLog.objects.filter(response_id=running.pk).exists()


def test_ends_ask_the_maintenance_queue_to_pack_their_logs_in_one_task_per_delay(monkeypatch, settings):
    from responses_app.stream import pack_requests

    pack_requests.pack_requests.send()  # what the tests before asked for
    sent = []
    monkeypatch.setattr(pack_requests.current_app, "send_task",
                        lambda name, args, queue: sent.append((name, args, queue)))
    # Long enough for three ends on a loaded machine (CI's took over 0.3 s).
    settings.PACK_DELAY_S, settings.PACK_QUEUE = 2.0, "maintenance"
    ended = []
    for _ in range(3):
        response, builder = running_response(deltas=2)
        finish(response, builder)
        ended.append(response.pk)
    assert not EventLog.objects.filter(response_id__in=ended).exists()  # not where they ended
    wait_until(lambda: sent, timeout=10)
    time.sleep(0.5)
    assert sent == [(pack_requests.PACK_TASK, [ended], "maintenance")]
    assert tasks.pack_event_logs_of(*sent[0][1]) == 3
    assert EventLog.objects.filter(response_id__in=ended).count() == 3
    assert not ResponseEvent.objects.filter(response_id__in=ended).exists()


def test_a_live_reader_sends_the_frames_each_commit_rang_with_and_reads_only_what_came_before(monkeypatch):
    response, builder = running_response(deltas=5)
    reads = []
    read = event_log.frames_after
    monkeypatch.setattr(event_log, "frames_after", lambda *args, **kwargs: reads.append(args) or read(*args, **kwargs))

    def write_more(n: int) -> None:
        builder.apply(ContentDelta(text=f"more{n} "))
        save_batch(response, OWNER, builder)

    async def follow() -> list[bytes | None]:
        reader = follow_frames(response.pk, -1)
        chunks = [await reader.__anext__()]  # what was committed before: read from the database
        for n in range(3):
            await db(write_more)(n)
            chunks.append(await reader.__anext__())
        await db(finish)(response, builder)
        chunks += [chunk async for chunk in reader]
        return chunks

    received = frames_in(asyncio.run(follow()))
    assert len(reads) == 1
    assert event_log.pack(response.pk)
    packed = event_log.packed_log(response.pk)
    assert received == packed.frames(-1, packed.last_sequence_number)


def test_a_live_reader_of_a_deleted_response_ends_with_the_deletion_not_with_an_end_it_never_stored():
    # delete_response ends the response (its terminal event) and deletes it in one
    # transaction: that event is never committed, so no reader may be sent it.
    response, _ = running_response(deltas=2)

    async def follow() -> tuple[list[bytes | None], list[bytes | None]]:
        reader = follow_frames(response.pk, -1, error_events=True)
        before = [await reader.__anext__()]
        await db(lambda: delete_response(Response.objects.get(pk=response.pk)))()
        return before, [chunk async for chunk in reader]

    before, after = (frames_in(chunks) for chunks in asyncio.run(follow()))
    assert len(after) == 1
    assert after[0].startswith(b"event: error\n") and RESPONSE_DELETED.encode() in after[0]
    assert all(b"event: error" not in frame for frame in before)
