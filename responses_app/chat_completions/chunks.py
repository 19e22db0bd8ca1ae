"""Running responses' events said as Chat Completions' stream: ``chat.completion.chunk``s
as every client's parser takes them, one response per choice (``n`` run side by side, their
chunks interleaved as they come, each with its choice's ``index``). The role comes once, first; then content and
reasoning deltas; a tool call's ``index``, on each of its chunks, counts the calls, and its
``id``, ``type`` and ``name`` come once, with its arguments in fragments after; the last
choice chunk has the finish reason; with ``stream_options.include_usage`` the usage chunk
comes last, once every choice has ended, its ``choices`` empty. A failed response ends the
stream with an ``error`` chunk (as OpenAI's stream does), and cancels the other choices; the
stream ends with ``[DONE]`` otherwise."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any

import orjson

from responses_app.chat_completions.completion import REASONING_NAMES, completion_id, failure, finish_reason, usage

JsonObject = dict[str, Any]
TERMINAL = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")
# The events a chunk is made of, or that end the stream; the rest (most of a response's
# frames are not deltas: items and parts added and done) are passed over unparsed.
SAID = frozenset({"response.created", "response.output_text.delta", "response.reasoning_text.delta",
                  "response.output_item.added", "response.function_call_arguments.delta", "error", *TERMINAL})
DONE = b"data: [DONE]\n\n"


class ChunkStream:
    """The chunks of one choice's response."""

    def __init__(self, response_id: str, created: int, model: str, include_usage: bool, logprobs: bool,
                 index: int = 0, reasoning_names: tuple[str, ...] = REASONING_NAMES) -> None:
        self.head = {"id": completion_id(response_id), "object": "chat.completion.chunk", "created": created,
                     "model": model, "system_fingerprint": None}
        self.include_usage = include_usage
        self.logprobs = logprobs
        self.index = index
        self.reasoning_names = reasoning_names
        self.calls: dict[str, int] = {}  # a function_call item's id: its tool call index
        self.usage: JsonObject | None = None  # the response's, once it has ended

    def chunks(self, kind: str, event: JsonObject) -> list[JsonObject]:
        """The chunks of one of the response's events (none for most)."""
        if kind == "response.created":
            return [self._choice({"role": "assistant", "content": ""})]
        if kind == "response.output_text.delta":
            tokens = {"content": event.get("logprobs") or [], "refusal": None} if self.logprobs else None
            return [self._choice({"content": event["delta"]}, logprobs=tokens)]
        if kind == "response.reasoning_text.delta":
            return [self._choice(dict.fromkeys(self.reasoning_names, event["delta"]))]
        if kind == "response.output_item.added" and event["item"]["type"] == "function_call":
            item = event["item"]
            index = self.calls[item["id"]] = len(self.calls)
            return [self._choice({"tool_calls": [{"index": index, "id": item["call_id"], "type": "function",
                                                  "function": {"name": item["name"], "arguments": ""}}]})]
        if kind == "response.function_call_arguments.delta":
            return [self._choice({"tool_calls": [{"index": self.calls[event["item_id"]],
                                                  "function": {"arguments": event["delta"]}}]})]
        if kind in TERMINAL and kind != "response.failed":
            response = event["response"]
            self.usage = response["usage"]
            return [self._choice({}, finish_reason(response, bool(self.calls)))]
        return []

    def _choice(self, delta: JsonObject, finish: str | None = None, logprobs: JsonObject | None = None) -> JsonObject:
        chunk = {**self.head, "choices": [{"index": self.index, "delta": delta, "logprobs": logprobs,
                                           "finish_reason": finish}]}
        return {**chunk, "usage": None} if self.include_usage else chunk


async def chat_frames(sources: list[AsyncIterator[bytes | None]],
                      streams: list[ChunkStream]) -> AsyncIterator[bytes | None]:
    """The responses' SSE frames (stream/reader.follow_frames, several at a time where they
    were committed together; None: a keep-alive), one source per choice, as the completion's."""
    ended = 0
    async with aclosing(_merged(sources)) as merged:  # leaving closes it: the choices still open are cancelled
        async for index, data in merged:
            if data is None:
                yield None
                continue
            out: list[bytes] = []
            for frame in data.split(b"\n\n"):
                head, _, body = frame.partition(b"\ndata: ")
                kind = head.removeprefix(b"event: ").decode()
                if kind not in SAID:
                    continue
                event = orjson.loads(body)
                if kind in ("response.failed", "error"):
                    error = (event.get("response") or {}).get("error") if kind == "response.failed" else event
                    yield b"".join(out) + _data({"error": failure(error or {}).body()["error"]})
                    return
                out += [_data(chunk) for chunk in streams[index].chunks(kind, event)]
                if kind in TERMINAL:
                    ended += 1
                    break
            if ended == len(streams):
                first = streams[0]
                if first.include_usage:
                    out.append(_data({**first.head, "choices": [], "usage": usage([each.usage for each in streams])}))
                yield b"".join(out) + DONE
                return
            if out:
                yield b"".join(out)


async def _merged(sources: list[AsyncIterator[bytes | None]]) -> AsyncGenerator[tuple[int, bytes | None], None]:
    """The sources' items as they come, each with its source's index, until each has ended.
    Leaving early (a hang-up, a failed choice) cancels the sources still open, which cancels
    their responses (follow_frames' on_disconnect)."""
    if len(sources) == 1:
        async for data in sources[0]:
            yield 0, data
        return
    # Bounded: with a slow client, the sources wait rather than pile their frames up here.
    queue: asyncio.Queue[tuple[int, bytes | None | BaseException | type[StopAsyncIteration]]] = asyncio.Queue(
        maxsize=2 * len(sources))

    async def pump(index: int, source: AsyncIterator[bytes | None]) -> None:
        try:
            async for data in source:
                await queue.put((index, data))
        except Exception as error:  # noqa: BLE001 - raised again by the consumer
            await queue.put((index, error))
        else:
            await queue.put((index, StopAsyncIteration))

    pumps = [asyncio.create_task(pump(index, source)) for index, source in enumerate(sources)]
    try:
        open_sources = len(sources)
        while open_sources:
            index, got = await queue.get()
            if isinstance(got, type):  # StopAsyncIteration: the source has ended
                open_sources -= 1
            elif isinstance(got, BaseException):
                raise got
            else:
                yield index, got
    finally:
        for task in pumps:
            task.cancel()
        await asyncio.gather(*pumps, return_exceptions=True)


def _data(chunk: JsonObject) -> bytes:
    # orjson, as the Responses stream's frames are written (stream/sse.py): about a tenth of
    # the standard library's time for a delta's chunk.
    return b"data: " + orjson.dumps(chunk) + b"\n\n"
