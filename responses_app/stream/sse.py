"""Server-Sent Events: the reader's frames as ``text/event-stream``, framed as OpenAI
frames them (``event:`` and ``data:`` lines, no ``id:``, no ``[DONE]``)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from django.http import StreamingHttpResponse

KEEPALIVE_FRAME = b": keep-alive\n\n"


def event_json(event: dict[str, Any]) -> str:
    """An event's JSON as it is stored and sent."""
    return json.dumps(event, separators=(",", ":"))


def frame(event_type: str, data: str) -> bytes:
    # No "id:" line: the SDK's decoder mishandles id lines followed by a comment.
    return f"event: {event_type}\ndata: {data}\n\n".encode()


def sse_frame(event: dict[str, Any]) -> bytes:
    return frame(event["type"], event_json(event))


async def _with_keepalives(frames: AsyncIterator[bytes | None]) -> AsyncIterator[bytes]:
    async for chunk in frames:
        yield KEEPALIVE_FRAME if chunk is None else chunk


def sse_response(frames: AsyncIterator[bytes | None]) -> StreamingHttpResponse:
    """A streaming response of ``frames``: whole SSE frames, one write per item (several
    frames that are ready together go out in one write); None: a keep-alive comment."""
    response = StreamingHttpResponse(_with_keepalives(frames), content_type="text/event-stream; charset=utf-8")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
