"""Rows -> OpenAI wire objects, built and checked with the ``openai`` package's own types."""

from __future__ import annotations

from typing import Any

from openai.types.conversations import ConversationItem
from openai.types.responses import CompactedResponse, ResponseItem
from openai.types.responses import Response as ResponseObject
from pydantic import TypeAdapter, ValidationError

from responses_app.models import Response
from responses_app.wire import encrypted_reasoning

_ITEM_ADAPTER: TypeAdapter = TypeAdapter(ResponseItem)
_CONVERSATION_ITEM_ADAPTER: TypeAdapter = TypeAdapter(ConversationItem)


def response_object(
    response: Response, output: list[dict[str, Any]], *, status: str | None = None,
    include: list[str] | None = None,
) -> dict[str, Any]:
    """The Response object for a row and its output items, as JSON-ready data.

    ``status`` overrides the row's status for the lifecycle events that are built
    before the row changes (response.created, response.in_progress, the terminal event).
    ``include`` adds to the request's own include values.
    """
    params = response.params
    include = [*params.include, *(include or [])]
    data = {
        "id": response.id,
        "object": "response",
        "created_at": int(response.created_at.timestamp()),
        "status": status or response.status,
        "background": response.background,
        "completed_at": int(response.completed_at.timestamp()) if response.completed_at else None,
        "error": response.error,
        "incomplete_details": response.incomplete_details,
        "instructions": params.instructions,
        "max_output_tokens": params.max_output_tokens,
        "max_tool_calls": params.max_tool_calls,
        "model": response.model,
        "output": [_with_encrypted_reasoning(public_item(item, include), response, include) for item in output],
        "parallel_tool_calls": params.parallel_tool_calls,
        "previous_response_id": response.previous_response_id,
        **({"conversation": {"id": response.conversation_id}} if response.conversation_id else {}),
        "prompt": params.prompt.to_stored() if params.prompt is not None else None,
        "prompt_cache_key": params.prompt_cache_key,
        "prompt_cache_retention": params.prompt_cache_retention,
        "reasoning": params.reasoning.to_stored(),
        "safety_identifier": params.safety_identifier,
        "service_tier": params.service_tier,
        "store": response.store,
        "temperature": params.temperature if params.temperature is not None else 1.0,
        "text": params.text.to_stored(),
        "tool_choice": params.tool_choice.to_stored(),
        "tools": [public_tool(tool) for tool in params.tools],
        "top_logprobs": params.top_logprobs,
        "top_p": params.top_p if params.top_p is not None else 1.0,
        # Not in the SDK's Response type (its extra fields pass through); the Open Responses
        # specification requires them.
        "presence_penalty": params.presence_penalty or 0.0,
        "frequency_penalty": params.frequency_penalty or 0.0,
        "truncation": params.truncation,
        "usage": response.usage,
        "user": params.user,
        "metadata": params.metadata,
    }
    rendered = ResponseObject.model_validate(data).model_dump(mode="json", exclude_unset=True, by_alias=True)
    # The SDK types timestamps as float; OpenAI sends integral seconds, and so do we.
    for name in ("created_at", "completed_at"):
        if rendered.get(name) is not None:
            rendered[name] = int(rendered[name])
    return rendered


def _with_encrypted_reasoning(item: dict[str, Any], response: Response, include: list[str]) -> dict[str, Any]:
    """A reasoning item sealed on request when its create did not ask for it (a retrieve's
    ``include``); one whose create asked carries the sealed content it was streamed with."""
    if (item["type"] != "reasoning" or encrypted_reasoning.INCLUDE not in include or item.get("encrypted_content")
            or encrypted_reasoning.INCLUDE in response.params.include):
        return item
    return {**item, "encrypted_content": encrypted_reasoning.encrypted_content(response.tenant_id,
                                                                               item.get("content") or [])}


def compacted_object(turn: Response, output: list[dict[str, Any]]) -> dict[str, Any]:
    """The response.compaction object: a compaction's output, with its summarization
    turn's id, time and usage."""
    data = {"id": turn.id, "object": "response.compaction", "created_at": int(turn.created_at.timestamp()),
            "output": [], "usage": turn.usage}
    rendered = CompactedResponse.model_validate(data).model_dump(mode="json", exclude_unset=True, by_alias=True)
    # The SDK types ``output`` as output items, yet it holds the user's (input) messages
    # too, as in OpenAI's API: each item is checked against the union of all items instead.
    return {**rendered, "created_at": data["created_at"], "output": [item_object(item) for item in output]}


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


def public_tool(tool: dict[str, Any]) -> dict[str, Any]:
    """A request's tool as echoed back: an MCP tool's credentials stay on the server."""
    if tool.get("type") != "mcp":
        return tool
    return {key: value for key, value in tool.items() if key not in ("headers", "authorization")}


def list_object(data: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    """One page of a list endpoint, in OpenAI's cursor-page shape."""
    return {"object": "list", "data": data, "first_id": data[0]["id"] if data else None,
            "last_id": data[-1]["id"] if data else None, "has_more": has_more}


def model_object(model_id: str) -> dict[str, Any]:
    """A served model as ``GET /v1/models`` lists it."""
    return {"id": model_id, "object": "model", "created": 0, "owned_by": "gpt-oss-responses"}
