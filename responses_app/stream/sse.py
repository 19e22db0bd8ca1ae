"""Server-Sent Events: the reader's events as ``text/event-stream``, framed as OpenAI
frames them (``event:`` and ``data:`` lines, no ``id:``, no ``[DONE]``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from django.http import StreamingHttpResponse

KEEPALIVE_FRAME = b": keep-alive\n\n"


def sse_frame(event: dict[str, Any]) -> bytes:
    # No "id:" line: the SDK's decoder mishandles id lines followed by a comment.
    return f"event: {event['type']}\ndata: {json.dumps(event, separators=(',', ':'))}\n\n".encode()


async def _frames(events: AsyncIterator[dict[str, Any] | None]) -> AsyncIterator[bytes]:
    async for event in events:
        yield KEEPALIVE_FRAME if event is None else sse_frame(event)


def sse_response(events: AsyncIterator[dict[str, Any] | None]) -> StreamingHttpResponse:
    """A streaming response of the reader's ``events`` (None: a keep-alive comment)."""
    response = StreamingHttpResponse(_frames(events), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
