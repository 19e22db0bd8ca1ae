"""Event names as a key asks for them (ApiKey.event_names). The event log stores OpenAI's
names; the Open Responses specification names the reasoning text events
``response.reasoning.delta`` / ``.done`` where OpenAI says ``response.reasoning_text.*``
(the fields are the same). Renamed on the way out, in the frames' bytes: both places a
name appears (the ``event:`` line and the JSON's ``"type"``) are matched with raw quotes
or a raw newline, which no JSON string holds, so no text of a response can be touched."""

from __future__ import annotations

from collections.abc import AsyncIterator

from responses_app.models import EventNames

_OPEN_RESPONSES = {"response.reasoning_text.delta": "response.reasoning.delta",
                   "response.reasoning_text.done": "response.reasoning.done"}
_REPLACEMENTS = [(pattern.format(old).encode(), pattern.format(new).encode())
                 for old, new in _OPEN_RESPONSES.items() for pattern in ("event: {}\n", '"type":"{}"')]


def open_responses_names(frames: bytes) -> bytes:
    if b"response.reasoning_text." not in frames:
        return frames
    for old, new in _REPLACEMENTS:
        frames = frames.replace(old, new)
    return frames


async def named(frames: AsyncIterator[bytes | None], names: str) -> AsyncIterator[bytes | None]:
    """``frames`` (None: a keep-alive) with the event names of ``names``."""
    if names != EventNames.OPEN_RESPONSES:
        async for chunk in frames:
            yield chunk
        return
    async for chunk in frames:
        yield chunk if chunk is None else open_responses_names(chunk)
