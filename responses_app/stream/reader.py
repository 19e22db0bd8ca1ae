"""The reader: replay committed events after a cursor, then follow live; and the wait for
a response to end.

Subscribe to the doorbell first, then read the database: an event committed between
the two is still found by the read, and one committed later rings the bell. A ring
carries its commit's frames: when they continue the cursor they are sent as they are, and
otherwise (a missed ring, a reader behind) the database is read. The cursor is the last
sequence number sent, so a reader neither skips nor repeats an event, and any web process
can serve any response at any time. It yields the events' SSE frames, from the doorbell or
from either form of the event log (stream/event_log.py).

A database restart is ridden out: a read that finds the database down is tried again
every RETRY_INTERVAL_S (a stream sends its keep-alives meanwhile) for up to
DATABASE_PATIENCE_S; then an API stream ends with an ``error`` event (its client resumes
with ``starting_after``), and any other reader gets the error raised.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace

from django.conf import settings

from responses_app import selectors
from responses_app.lib.asyncdb import db, stream_db
from responses_app.lib.db_outage import DATABASE_DOWN, RETRY_INTERVAL_S
from responses_app.models import TERMINAL_STATUSES, Response
from responses_app.observability import recorder
from responses_app.stream import creates_first, doorbell, event_log
from responses_app.stream.sse import error_frame

# Every commit rings the doorbell, so a subscribed reader reads the database when told to,
# and only every SAFETY_POLL_S in case a message was lost. Idle streams cost almost nothing.
SAFETY_POLL_S = 5.0
# A response that another web process is waiting on is read at least this often.
FINISH_POLL_S = 1.0
DATABASE_PATIENCE_S = 30.0
RESPONSE_DELETED = "The response was deleted while it was being streamed."
DATABASE_GONE = ("The database stayed unavailable; the response may still be running: resume this stream with "
                 "starting_after={cursor}.")


class ResponseGone(Exception):
    """The response was deleted while someone waited for it."""


async def follow_frames(
    response_id: str, starting_after: int, on_disconnect: Callable[[], None] | None = None,
    committed: event_log.Frames | None = None, error_events: bool = False,
) -> AsyncIterator[bytes | None]:
    """The SSE frames of the events with sequence_number > starting_after, live until the
    terminal event (or the response's deletion), several at a time where several were
    committed together. ``None`` stands for "nothing for SSE_KEEPALIVE_S": the transport
    sends its keep-alive. ``on_disconnect`` runs (in a database thread) when the consumer
    goes away before the end. ``committed``: the frames right after ``starting_after``,
    known to be committed (a create's response.created), sent before the first read.
    ``error_events``: a stream that cannot go on (the response was deleted, the database
    stayed down) ends with an ``error`` event (sse.error_frame) instead of just ending."""
    cursor = starting_after
    finished = False
    recorder.sse_stream_opened()
    try:
        if committed is not None:
            # Sent before subscribing: it is committed, so it needs no read; the
            # subscription still comes before the first read.
            yield committed.data
            cursor = committed.last_sequence_number
        async with doorbell.listening(response_id) as listener:
            last_sent = time.monotonic()
            outage_since: float | None = None
            while True:
                pushed = listener.take_after(cursor)
                try:
                    if pushed is not None:  # the doorbell brought what follows the cursor
                        frames, state = event_log.Frames(pushed.data, pushed.last, pushed.ends), None
                    else:
                        await creates_first.before_stream_read()
                        frames = await _frames_after(response_id, cursor)
                        state = None if frames.data else await stream_db(selectors.stream_state)(response_id)
                except DATABASE_DOWN:
                    outage_since = outage_since or time.monotonic()
                    if time.monotonic() - outage_since > DATABASE_PATIENCE_S:
                        if not error_events:
                            raise
                        finished = True
                        yield error_frame(cursor + 1, "database_unavailable", DATABASE_GONE.format(cursor=cursor),
                                          "server_error")
                        return
                    await asyncio.sleep(RETRY_INTERVAL_S)
                    if time.monotonic() - last_sent >= settings.SSE_KEEPALIVE_S:
                        yield None
                        last_sent = time.monotonic()
                    continue
                outage_since = None
                if frames.data:
                    yield frames.data
                    cursor = frames.last_sequence_number
                    last_sent = time.monotonic()
                    if frames.ends:
                        finished = True
                        return
                    if frames.more:
                        continue
                    # The read had all that was committed when it ran: what commits after it
                    # rings (or, without a subscription, is found by the next poll).
                elif state is None or (state[0] in TERMINAL_STATUSES and cursor >= state[1]):
                    finished = True  # deleted, or nothing after the cursor will ever come
                    if state is None and error_events:
                        yield error_frame(cursor + 1, "response_deleted", RESPONSE_DELETED, "invalid_request_error")
                    return
                keepalive_due = settings.SSE_KEEPALIVE_S - (time.monotonic() - last_sent)
                await listener.wait(max(min(SAFETY_POLL_S, keepalive_due), 0.05))
                if time.monotonic() - last_sent >= settings.SSE_KEEPALIVE_S:
                    yield None
                    last_sent = time.monotonic()
    except asyncio.CancelledError:
        if not finished and on_disconnect is not None:
            await db(on_disconnect)()
        raise
    finally:
        recorder.sse_stream_closed()


@dataclass
class _Read:
    """One read of frames_after, shared; ``started``: when its thread began it."""

    response_id: str
    cursor: int
    started: float = math.inf
    frames: asyncio.Future[event_log.Frames] | None = None

    def run(self) -> event_log.Frames:
        self.started = time.monotonic()
        return event_log.frames_after(self.response_id, self.cursor)


_reads: dict[tuple[str, int], _Read] = {}


async def _frames_after(response_id: str, cursor: int) -> event_log.Frames:
    """event_log.frames_after in a stream thread, read once for all of this process's
    readers at the same point of the same response: a thousand readers following one
    response make one query per commit, not a thousand.

    A reader trusts a read that it joined as it would its own only if that read started
    after the reader asked (so after the commit whose ring woke it). An earlier one may
    miss that commit: its empty answer is not believed (the reader reads on its own), and
    its frames are sent but read after at once (``more``)."""
    key = (response_id, cursor)
    asked = time.monotonic()
    read = _reads.get(key)
    if read is None:
        read = _reads[key] = _Read(response_id, cursor)
        read.frames = asyncio.ensure_future(stream_db(read.run)())
        read.frames.add_done_callback(functools.partial(_forget, key))
        # One reader going away must not cancel the read that others wait for.
        return await asyncio.shield(read.frames)
    assert read.frames is not None  # set as the read was stored, before any await
    frames = await asyncio.shield(read.frames)
    if read.started >= asked:
        return frames
    if not frames.data:
        return await stream_db(event_log.frames_after)(response_id, cursor)
    return replace(frames, more=not frames.ends)


def _forget(key: tuple[str, int], done: asyncio.Future[event_log.Frames]) -> None:
    _reads.pop(key, None)
    if not done.cancelled():
        done.exception()  # retrieved here: every reader waiting for it may have gone


async def wait_until_finished(response_id: str) -> Response:
    """The response once it is terminal. Raises ResponseGone if it is deleted first."""
    async with doorbell.listening(response_id) as listener:
        outage_since: float | None = None
        while True:
            try:
                response = await db(selectors.response_by_id)(response_id)
            except DATABASE_DOWN:
                outage_since = outage_since or time.monotonic()
                if time.monotonic() - outage_since > DATABASE_PATIENCE_S:
                    raise
                await asyncio.sleep(RETRY_INTERVAL_S)
                continue
            outage_since = None
            if response is None:
                raise ResponseGone(response_id)
            if response.is_terminal:
                return response
            await listener.wait(FINISH_POLL_S)
