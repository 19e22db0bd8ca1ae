"""A completion's ``messages`` as the Responses input items that say the same conversation
to harmony (harmony/history.py renders them):

- ``system`` and ``developer``: those that open the conversation are its instructions, which
  harmony's developer message holds before the tools (as gpt-oss's own chat template puts
  them); a later one is a message of that role (a developer message of its own);
- ``user``: its text and file parts (a file is read as text, as ``input_file`` is);
- ``assistant``: its reasoning (``reasoning_content`` or ``reasoning``, as vLLM's clients send
  it back), its content (on the commentary channel beside tool calls, as a preamble; else
  the final answer) and a ``function_call`` per tool call;
- ``tool``: a ``function_call_output`` for the call its ``tool_call_id`` names, whose author
  in harmony is that call's function.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.lib.ids import new_id
from responses_app.wire.errors import InvalidRequest, invalid_type

ROLES = ("system", "developer", "user", "assistant", "tool")
REASONING_FIELDS = ("reasoning_content", "reasoning")
JsonObject = dict[str, Any]


@dataclass(frozen=True)
class Conversation:
    """The input items, and for each the index of the message it came from (for errors); the
    instructions of the messages that open it."""

    items: list[JsonObject]
    origins: list[int]
    instructions: str | None = None


def without_reasoning(messages: Any) -> tuple[Any, dict[int, str]]:
    """The messages without the reasoning fields the SDK does not type, and that reasoning
    by message index. A message of an unknown role is a 400 naming every role."""
    if not isinstance(messages, list):
        return messages, {}
    reasoning: dict[int, str] = {}
    bare = []
    for index, message in enumerate(messages):
        if isinstance(message, dict) and message.get("role") not in ROLES and "role" in message:
            raise InvalidRequest(f"Invalid value for 'messages[{index}].role': {message['role']!r}. Supported values "
                                 f"are: {', '.join(repr(role) for role in ROLES)}.", param=f"messages[{index}].role",
                                 code="invalid_value")
        if isinstance(message, dict) and message.get("role") == "assistant":
            for name in REASONING_FIELDS:
                value = message.get(name)
                if value is not None and not isinstance(value, str):
                    raise invalid_type(f"messages[{index}].{name}", "a string", value)
                if value:
                    reasoning.setdefault(index, value)
            message = {key: value for key, value in message.items() if key not in REASONING_FIELDS}
        bare.append(message)
    return bare, reasoning


def conversation(messages: list[JsonObject], reasoning: dict[int, str]) -> Conversation:
    """The items of ``messages`` (checked against the SDK's types already)."""
    if not messages:
        raise InvalidRequest("'messages' must not be empty.", param="messages", code="empty_array")
    opening = next((index for index, message in enumerate(messages) if message["role"] not in ("system", "developer")),
                   0)  # only instructions: they stay messages, the conversation's whole input
    instructions = [_text(message["content"], f"messages[{index}]") for index, message in enumerate(messages[:opening])]
    items: list[JsonObject] = []
    origins: list[int] = []
    for index, message in enumerate(messages[opening:], start=opening):
        made = _items(message, reasoning.get(index), f"messages[{index}]")
        items += made
        origins += [index] * len(made)
    return Conversation(items, origins, "\n\n".join(instructions) if instructions else None)


def _items(message: JsonObject, reasoning: str | None, param: str) -> list[JsonObject]:
    role = message["role"]
    if role in ("system", "developer"):
        return [{"type": "message", "role": role, "content": _text(message["content"], param)}]
    if role == "user":
        return [{"type": "message", "role": "user", "content": _user_content(message["content"], param)}]
    if role == "tool":
        return [{"type": "function_call_output", "call_id": message["tool_call_id"],
                 "output": _text(message["content"], param)}]
    return _assistant(message, reasoning, param)


def _assistant(message: JsonObject, reasoning: str | None, param: str) -> list[JsonObject]:
    if message.get("function_call") is not None:
        raise InvalidRequest("'function_call' is deprecated: send 'tool_calls'.", param=f"{param}.function_call")
    if message.get("audio") is not None:
        raise InvalidRequest("gpt-oss takes no audio.", param=f"{param}.audio")
    calls = message.get("tool_calls") or []
    items: list[JsonObject] = []
    if reasoning:
        items.append({"type": "reasoning", "id": new_id("rs"), "summary": [],
                      "content": [{"type": "reasoning_text", "text": reasoning}]})
    content = _text(message.get("content"), param) if message.get("content") is not None else ""
    if content:
        said = {"type": "message", "role": "assistant", "content": content}
        items.append({**said, "phase": "commentary"} if calls else said)
    for index, call in enumerate(calls):
        if call["type"] != "function":
            raise InvalidRequest(f"Only function tool calls can be replayed, not {call['type']!r}.",
                                 param=f"{param}.tool_calls[{index}].type", code="invalid_value")
        items.append({"type": "function_call", "call_id": call["id"], "name": call["function"]["name"],
                      "arguments": call["function"]["arguments"]})
    if not items:
        raise InvalidRequest("An assistant message needs 'content' or 'tool_calls'.", param=f"{param}.content")
    return items


def _text(content: str | list[JsonObject] | None, param: str) -> str:
    """A message's text: a string, or its text (and refusal) parts joined."""
    if content is None:
        raise InvalidRequest(f"'{param}.content' is required.", param=f"{param}.content",
                             code="missing_required_parameter")
    if isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(content):
        if part["type"] not in ("text", "refusal"):
            raise InvalidRequest(f"This message takes text parts only, not {part['type']!r}.",
                                 param=f"{param}.content[{index}].type", code="invalid_value")
        texts.append(part.get("text") or part.get("refusal") or "")
    return "".join(texts)


def _user_content(content: str | list[JsonObject], param: str) -> str | list[JsonObject]:
    if isinstance(content, str):
        return content
    parts: list[JsonObject] = []
    for index, part in enumerate(content):
        kind = part["type"]
        if kind == "text":
            parts.append({"type": "input_text", "text": part["text"]})
        elif kind == "file":
            given = part["file"]
            parts.append({"type": "input_file", **{key: given[key] for key in ("file_id", "file_data", "filename")
                                                   if given.get(key) is not None}})
        else:  # image_url, input_audio
            raise InvalidRequest(f"gpt-oss reads text only: a {kind!r} part cannot be read.",
                                 param=f"{param}.content[{index}].type", code="invalid_value")
    return parts
