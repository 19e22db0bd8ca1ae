"""Items, lists and models as OpenAI wire objects, built and checked with the ``openai`` package's own
types (a response is response_object.py's)."""

from __future__ import annotations

from typing import Any

from openai.types.conversations import ConversationItem
from openai.types.responses import ResponseItem
from pydantic import TypeAdapter, ValidationError

_ITEM_ADAPTER: TypeAdapter = TypeAdapter(ResponseItem)
_CONVERSATION_ITEM_ADAPTER: TypeAdapter = TypeAdapter(ConversationItem)


def item_object(item: dict[str, Any]) -> dict[str, Any]:
    """An output or input item checked against the SDK's item union."""
    return _ITEM_ADAPTER.validate_python(_without_file_texts(item)).model_dump(
        mode="json", exclude_unset=True, by_alias=True)


def conversation_item_object(item: dict[str, Any], include: list[str]) -> dict[str, Any]:
    """A conversation's item as the client asked to see it, checked against the SDK's union."""
    return _CONVERSATION_ITEM_ADAPTER.validate_python(public_item(item, include)).model_dump(
        mode="json", exclude_unset=True, by_alias=True)


class _ServableCheck:
    """Whether an item validates against an SDK union, fast: pydantic tries a big union's
    members one by one (about 60 µs an item for these), so each item is tried first against
    the member that last accepted an item of its type and role. An item that a member
    accepts, the union accepts; one that it refuses is tried against the whole union."""

    def __init__(self, union: TypeAdapter) -> None:
        self.union = union
        self.members: dict[tuple[Any, Any], TypeAdapter] = {}

    def __call__(self, item: dict[str, Any]) -> None:
        key = (item.get("type"), item.get("role"))
        member = self.members.get(key)
        if member is not None:
            try:
                member.validate_python(item)
                return
            except ValidationError:
                pass
        self.members[key] = TypeAdapter(type(self.union.validate_python(item)))


_check_item = _ServableCheck(_ITEM_ADAPTER)
_check_conversation_item = _ServableCheck(_CONVERSATION_ITEM_ADAPTER)


def check_servable(item: dict[str, Any]) -> None:
    """Raise pydantic's ValidationError unless ``item`` renders both as an input item
    (item_object) and as a conversation's item (conversation_item_object)."""
    served = public_item(item, [])
    _check_item(served)
    _check_conversation_item(served)


def public_item(item: dict[str, Any], include: list[str]) -> dict[str, Any]:
    """An output item as the client asked to see it: the stored item always keeps the tool
    outputs (the model reads them on later turns), the wire only when ``include`` says so."""
    item = _without_file_texts(item)
    if item.get("type") == "code_interpreter_call" and "code_interpreter_call.outputs" not in include:
        return {**item, "outputs": None}
    if item.get("type") == "file_search_call" and "file_search_call.results" not in include:
        return {**item, "results": None}
    action = item.get("action") or {}
    wants_sources = "web_search_call.action.sources" in include
    if item.get("type") == "web_search_call" and "sources" in action and not wants_sources:
        return {**item, "action": {key: value for key, value in action.items() if key != "sources"}}
    return item


def _without_file_texts(item: dict[str, Any]) -> dict[str, Any]:
    """A message without the text read from its input_file parts, which the stored item keeps
    for the prompt (files/inputs.py) and the SDK's ResponseInputFile does not type."""
    content = item.get("content")
    if not isinstance(content, list) or not any(isinstance(part, dict) and part.get("type") == "input_file"
                                                for part in content):
        return item
    return {**item, "content": [{key: value for key, value in part.items() if key != "text"}
                                if part.get("type") == "input_file" else part for part in content]}


def list_object(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """One page of a list endpoint, in OpenAI's cursor-page shape."""
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": has_more}


def model_object(model_id: str) -> dict[str, Any]:
    """A served model as ``GET /v1/models`` lists it."""
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "gpt-oss-responses"}
