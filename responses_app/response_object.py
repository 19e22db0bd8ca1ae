"""A Response row as the API's response object (and a compaction's ``response.compaction``),
built and checked with the ``openai`` package's own types."""

from __future__ import annotations

from typing import Any

from openai.types.responses import CompactedResponse
from openai.types.responses import Response as ResponseObject

from responses_app.models import Response
from responses_app.wire import encrypted_reasoning
from responses_app.wire.objects import item_object, public_item
from responses_app.wire.tool_types import public_tool


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
