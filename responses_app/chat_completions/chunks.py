"""A running response's events said as Chat Completions' stream: ``chat.completion.chunk``s
as every client's parser takes them. The role comes once, first; then content and
reasoning deltas; a tool call's ``index``, on each of its chunks, counts the calls, and its
``id``, ``type`` and ``name`` come once, with its arguments in fragments after; the last
choice chunk has the finish reason; with ``stream_options.include_usage`` the usage chunk
comes last, its ``choices`` empty. A failed response ends with an ``error`` chunk (as
OpenAI's stream does); the stream with ``[DONE]`` otherwise."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from responses_app.chat_completions.completion import completion_id, failure, finish_reason, usage
from responses_app.stream.event_log import parse_frame

JsonObject = dict[str, Any]
TERMINAL = ("response.completed", "response.incomplete", "response.failed", "response.cancelled")
DONE = b"data: [DONE]\n\n"


class ChunkStream:
    def __init__(self, response_id: str, created: int, model: str, include_usage: bool, logprobs: bool) -> None:
        self.head = {"id": completion_id(response_id), "object": "chat.completion.chunk", "created": created,
                     "model": model, "system_fingerprint": None}
        self.include_usage = include_usage
        self.logprobs = logprobs
        self.calls: dict[str, int] = {}  # a function_call item's id: its tool call index

    def chunks(self, kind: str, event: JsonObject) -> list[JsonObject]:
        """The chunks of one of the response's events (none for most)."""
        if kind == "response.created":
            return [self._choice({"role": "assistant", "content": ""})]
        if kind == "response.output_text.delta":
            tokens = {"content": event.get("logprobs") or [], "refusal": None} if self.logprobs else None
            return [self._choice({"content": event["delta"]}, logprobs=tokens)]
        if kind == "response.reasoning_text.delta":
            return [self._choice({"reasoning_content": event["delta"], "reasoning": event["delta"]})]
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
            ended = [self._choice({}, finish_reason(response, bool(self.calls)))]
            if self.include_usage:
                ended.append({**self.head, "choices": [], "usage": usage(response["usage"])})
            return ended
        return []

    def _choice(self, delta: JsonObject, finish: str | None = None, logprobs: JsonObject | None = None) -> JsonObject:
        chunk = {**self.head, "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish}]}
        return {**chunk, "usage": None} if self.include_usage else chunk


async def chat_frames(frames: AsyncIterator[bytes | None], stream: ChunkStream) -> AsyncIterator[bytes | None]:
    """The response's SSE frames (stream/reader.follow_frames, several at a time where they
    were committed together; None: a keep-alive) as the completion's."""
    async for data in frames:
        if data is None:
            yield None
            continue
        out: list[bytes] = []
        for frame in data.split(b"\n\n"):
            if not frame:
                continue
            kind, event = parse_frame(frame + b"\n\n")
            if kind in ("response.failed", "error"):
                error = (event.get("response") or {}).get("error") if kind == "response.failed" else event
                yield b"".join(out) + _data({"error": failure(error or {}).body()["error"]})
                return
            out += [_data(chunk) for chunk in stream.chunks(kind, event)]
            if kind in TERMINAL:
                yield b"".join(out) + DONE
                return
        if out:
            yield b"".join(out)


def _data(chunk: JsonObject) -> bytes:
    return b"data: " + json.dumps(chunk, separators=(",", ":")).encode() + b"\n\n"
