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
from .services import TERMINAL_EVENT_TYPES

log = logging.getLogger(__name__)
# Without a doorbell (Redis restarting, a lost message) the reader still polls this often.
POLL_INTERVAL_S = 1.0


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
            await _wait_for_doorbell(pubsub)
            if time.monotonic() - last_sent >= settings.SSE_KEEPALIVE_S:
                yield b": keep-alive\n\n"
                last_sent = time.monotonic()
    except asyncio.CancelledError:
        if not finished and on_disconnect is not None:
            await db(on_disconnect)()
        raise
    finally:
        if pubsub is not None:
            try:
                await pubsub.aclose()
            except Exception:  # best effort on a dying connection
                pass
        await redis.aclose()


async def _wait_for_doorbell(pubsub: Any) -> None:
    if pubsub is None:
        await asyncio.sleep(POLL_INTERVAL_S)
        return
    deadline = time.monotonic() + POLL_INTERVAL_S
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
