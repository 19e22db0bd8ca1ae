"""The ``response.steer`` event of the Responses WebSocket, validated as the SDK documents
it: only ``type``, ``previous_response_id`` and ``input``; input a string or a non-empty
array of user messages, each with only ``type`` ("message"), ``role`` and ``content``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.validation.input_items import parse_input
from responses_app.wire.errors import InvalidRequest, invalid_type

STEER_FIELDS = frozenset({"type", "previous_response_id", "input"})
MESSAGE_FIELDS = frozenset({"type", "role", "content"})
CONTENT_TYPES = frozenset({"input_text", "input_image", "input_file"})


@dataclass(frozen=True)
class SteerRequest:
    previous_response_id: str
    input: Any  # as sent: response.steer.failed hands it back
    input_items: list[dict[str, Any]]


def parse_steer(event: dict[str, Any]) -> SteerRequest:
    """Raises InvalidRequest (the steer fails with ``invalid_input``)."""
    unknown = sorted(set(event) - STEER_FIELDS)
    if unknown:
        hint = " (the target response determines the lane)" if unknown == ["stream_id"] else ""
        raise InvalidRequest(f"Unknown parameter for response.steer: '{unknown[0]}'{hint}.", param=unknown[0],
                             code="unknown_parameter")
    target = event.get("previous_response_id")
    if not isinstance(target, str) or not target:
        raise invalid_type("previous_response_id", "a response id", target)
    raw = event.get("input")
    if isinstance(raw, str):
        if not raw:
            raise InvalidRequest("'input' must not be empty.", param="input")
    elif isinstance(raw, list) and raw:
        for index, item in enumerate(raw):
            _check_message(item, f"input[{index}]")
    else:
        raise invalid_type("input", "a string or a non-empty array of user messages", raw)
    return SteerRequest(previous_response_id=target, input=raw, input_items=parse_input(raw))


def _check_message(item: Any, param: str) -> None:
    if not isinstance(item, dict):
        raise invalid_type(param, "a user message", item)
    if item.get("type", "message") != "message" or item.get("role") != "user":
        raise InvalidRequest(f"'{param}' must be a message with role 'user': steering accepts user input only.",
                             param=param)
    extra = sorted(set(item) - MESSAGE_FIELDS)
    if extra:
        raise InvalidRequest(f"'{param}.{extra[0]}' is not allowed in steering input.", param=f"{param}.{extra[0]}")
    content = item.get("content")
    if isinstance(content, list):
        for index, part in enumerate(content):
            if not isinstance(part, dict) or part.get("type") not in CONTENT_TYPES:
                raise InvalidRequest(f"'{param}.content[{index}]' must be an input_text, input_image or input_file "
                                     "part.", param=f"{param}.content[{index}]")
