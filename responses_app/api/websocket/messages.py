"""The server's messages on the Responses WebSocket: a response's stream events, one per
message, exactly as SSE sends them plus their lane's ``stream_id``; ``error`` events; and
the steering events (``response.steer.accepted`` / ``pending`` / ``failed``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from responses_app.models import TERMINAL_EVENT_TYPES, ResponseSteer
from responses_app.wire.errors import APIError

DATA_MARK = b"\ndata: "


@dataclass(frozen=True)
class StreamMessages:
    """The messages of a run of SSE frames, and where that run ends."""

    texts: list[str]
    last_sequence_number: int
    ends: bool  # the run holds the terminal event


def stream_messages(frames: bytes, stream_id: str | None) -> StreamMessages:
    """One message per SSE frame (``event: <type>\\ndata: <json>\\n\\n``; the JSON has no
    raw newline), ``stream_id`` written into each object without parsing it."""
    lane = b',"stream_id":' + json.dumps(stream_id).encode() + b"}" if stream_id else b""
    texts, kind, data = [], b"", b""
    for frame in frames.split(b"\n\n"):
        if not frame:
            continue
        head, _, data = frame.partition(DATA_MARK)
        kind = head.removeprefix(b"event: ")
        texts.append((data[:-1] + lane if lane else data).decode())
    return StreamMessages(texts, json.loads(data)["sequence_number"] if data else -1,
                          kind.decode() in TERMINAL_EVENT_TYPES)


def _with_lane(event: dict[str, Any], stream_id: str | None) -> str:
    if stream_id:
        event["stream_id"] = stream_id
    return json.dumps(event, separators=(",", ":"))


def error_event(error: APIError, stream_id: str | None = None) -> str:
    """An ``error`` event for a client event that could not be carried out, with the HTTP
    status that ``POST /v1/responses`` would have answered (the SDK's ResponseWsError)."""
    event: dict[str, Any] = {"type": "error", "status": error.status_code, **error.body()}
    if error.headers():
        event["error"]["headers"] = error.headers()
    return _with_lane(event, stream_id)


def steer_accepted(steer: ResponseSteer, sequence_number: int, stream_id: str | None) -> str:
    return _with_lane({"type": "response.steer.accepted", "sequence_number": sequence_number,
                       "steer": {"id": steer.pk, "previous_response_id": steer.response_id}}, stream_id)


def steer_pending(steer: ResponseSteer, required_input: list[dict[str, Any]], sequence_number: int,
                  stream_id: str | None) -> str:
    return _with_lane({"type": "response.steer.pending", "reason": "waiting_for_required_input",
                       "required_input": required_input, "sequence_number": sequence_number,
                       "steer": {"id": steer.pk, "previous_response_id": steer.response_id}}, stream_id)


def steer_failed(code: str, message: str, *, previous_response_id: str, steer_input: Any, sequence_number: int,
                 stream_id: str | None, steer_id: str | None = None) -> str:
    steer: dict[str, Any] = {"input": steer_input, "previous_response_id": previous_response_id}
    if steer_id is not None:
        steer["id"] = steer_id
    return _with_lane({"type": "response.steer.failed", "sequence_number": sequence_number, "steer": steer,
                       "error": {"code": code, "message": message, "type": "invalid_request_error"}}, stream_id)
