"""The fields of a JSON request body, with OpenAI's 400s for what is missing or unknown."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection
from typing import Any, TypeGuard

from responses_app.wire.errors import InvalidRequest

# The largest integer a client may give (token counts, cursors): what an integer column
# and the engines' 32-bit counters hold.
MAX_INTEGER = 2**31 - 1
# The answer's token logprobs: the engine computes them only when a create asks for them.
LOGPROBS_INCLUDE = "message.output_text.logprobs"
# What the stored items always hold and the wire leaves out unless asked (wire/objects.public_item).
SUPPORTED_INCLUDE_VALUES = frozenset({"code_interpreter_call.outputs", "web_search_call.action.sources",
                                      "file_search_call.results", "reasoning.encrypted_content", LOGPROBS_INCLUDE})


def json_object(body: Any) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise InvalidRequest("The request body must be a JSON object.")
    return body


def body_fields(body: Any, names: Collection[str], required: Collection[str] = ()) -> dict[str, Any]:
    """The fields of ``body`` that are set (not null), each one of ``names``; a 400 for
    any other field and for each of ``required`` that is missing or null."""
    body = json_object(body)
    for name in body:
        if name not in names:
            raise InvalidRequest(f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")
    for name in required:
        if body.get(name) is None:
            raise InvalidRequest(f"Missing required parameter: '{name}'.", param=name,
                                 code="missing_required_parameter")
    return {name: body[name] for name in names if body.get(name) is not None}


def sent_fields(parsed: Any) -> dict[str, Any]:
    """The fields of a parsed body (a dataclass whose None means "not sent") that were sent:
    what an update changes."""
    values = {field.name: getattr(parsed, field.name) for field in dataclasses.fields(parsed)}
    return {name: value for name, value in values.items() if value is not None}


# JSON's numbers as Python reads them: a bool is an int to Python, never to a client.
def is_integer(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
