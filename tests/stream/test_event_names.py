"""stream/event_names: the Open Responses names, renamed in the frames' bytes."""

from __future__ import annotations

import asyncio

from responses_app.stream.event_names import named, open_responses_names
from responses_app.stream.sse import sse_frame

# A delta whose text is the very bytes that are renamed, but inside a JSON string.
TEXT = 'x "type":"response.reasoning_text.delta" event: response.reasoning_text.done\n'


def test_only_event_names_are_renamed_never_the_text_of_a_response():
    frames = (sse_frame({"content_index": 0, "delta": TEXT, "item_id": "rs_1", "output_index": 0,
                         "sequence_number": 3, "type": "response.reasoning_text.delta"})
              + sse_frame({"content_index": 0, "text": TEXT, "item_id": "rs_1", "output_index": 0,
                           "sequence_number": 4, "type": "response.reasoning_text.done"}))

    renamed = open_responses_names(frames)

    assert renamed == frames.replace(b"event: response.reasoning_text.delta\n", b"event: response.reasoning.delta\n") \
        .replace(b'"type":"response.reasoning_text.delta"}', b'"type":"response.reasoning.delta"}') \
        .replace(b"event: response.reasoning_text.done\n", b"event: response.reasoning.done\n") \
        .replace(b'"type":"response.reasoning_text.done"}', b'"type":"response.reasoning.done"}')
    assert renamed.count(b"response.reasoning_text.") == 4  # the two names in each of the two texts


def test_openai_names_pass_through_untouched_and_keep_alives_stay():
    async def collect(names: str) -> list:
        async def frames():
            yield b'event: response.reasoning_text.delta\ndata: {"type":"response.reasoning_text.delta"}\n\n'
            yield None
        return [chunk async for chunk in named(frames(), names)]

    assert asyncio.run(collect("openai"))[0].startswith(b"event: response.reasoning_text.delta")
    assert asyncio.run(collect("open_responses")) == [
        b'event: response.reasoning.delta\ndata: {"type":"response.reasoning.delta"}\n\n', None]
