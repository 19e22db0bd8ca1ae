"""The SSE reader: replay committed events after a cursor, then follow live.

Subscribe to the doorbell first, then read the database: an event committed between
the two is still found by the read, and one committed later rings the bell. The cursor
is the last sequence number sent, so a reader neither skips nor repeats an event, and
any web process can serve any response at any time.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from django.conf import settings
from django.http import StreamingHttpResponse

from . import doorbell, selectors
from .asyncdb import db
from .models import TERMINAL_STATUSES
from .observability import recorder
from .services import TERMINAL_EVENT_TYPES

log = logging.getLogger(__name__)
# Every commit rings the doorbell, so a subscribed reader reads the database when told to,
# and only every SAFETY_POLL_S in case a message was lost; without a subscription (Redis
# unavailable) it polls every POLL_INTERVAL_S. Idle streams then cost almost nothing.
POLL_INTERVAL_S = 1.0
SAFETY_POLL_S = 5.0


def sse_frame(event: dict[str, Any]) -> bytes:
    # No "id:" line: the SDK's decoder mishandles id lines followed by a comment.
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


async def follow_events(
    response_id: str, starting_after: int, on_disconnect: Callable[[], None] | None = None
) -> AsyncIterator[bytes]:
    """Events with sequence_number > starting_after, live until the terminal event."""
    cursor = starting_after
    redis = doorbell.async_client()
    pubsub = redis.pubsub()
    finished = False
    recorder.sse_stream_opened()
    try:
        try:
            await pubsub.subscribe(doorbell.channel_name(response_id))
        except Exception as error:  # the database alone still serves the stream
            log.warning("doorbell unavailable for %s: %s", response_id, error)
            pubsub = None
        last_sent = time.monotonic()
        while True:
            events = await db(selectors.events_after)(response_id, cursor)
            for event in events:
                yield sse_frame(event)
                cursor = event["sequence_number"]
                last_sent = time.monotonic()
                if event["type"] in TERMINAL_EVENT_TYPES:
                    finished = True
                    return
            if events:
                continue
            state = await db(selectors.stream_state)(response_id)
            if state is None or (state[0] in TERMINAL_STATUSES and cursor >= state[1]):
                finished = True  # deleted, or nothing after the cursor will ever come
                return
            keepalive_due = settings.SSE_KEEPALIVE_S - (time.monotonic() - last_sent)
            await _wait_for_doorbell(pubsub, max(min(SAFETY_POLL_S, keepalive_due), 0.05))
            if time.monotonic() - last_sent >= settings.SSE_KEEPALIVE_S:
                yield b": keep-alive\n\n"
                last_sent = time.monotonic()
    except asyncio.CancelledError:
        if not finished and on_disconnect is not None:
            await db(on_disconnect)()
        raise
    finally:
        recorder.sse_stream_closed()
        if pubsub is not None:
            try:
                await pubsub.aclose()
            except Exception:  # best effort on a dying connection
                pass
        await redis.aclose()


async def _wait_for_doorbell(pubsub: Any, timeout: float) -> None:
    if pubsub is None:
        await asyncio.sleep(min(POLL_INTERVAL_S, timeout))
        return
    deadline = time.monotonic() + timeout
    while (remaining := deadline - time.monotonic()) > 0:
        try:
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=remaining)
        except Exception:
            await asyncio.sleep(remaining)
            return
        if message is not None:
            return


def sse_response(stream: AsyncIterator[bytes]) -> StreamingHttpResponse:
    response = StreamingHttpResponse(stream, content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
