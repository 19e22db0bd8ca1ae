"""What the response detail page shows: stored request and items turned into plain views.

The stored items are the wire shapes of the Responses API (``OutputItem.data``); an
operator wants to read them, not parse them. Each function here returns plain dicts
and lists for the templates, tolerant of missing keys (items written by older code,
or by a worker that died mid-item), and never trusting a URL the model produced:
only http(s) URLs become links, so a ``javascript:`` annotation cannot run in a
staff member's session.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from responses_app.harmony.client_tools import (
    BY_CALL_TYPE,
    BY_OUTPUT_TYPE,
    answered_call_id,
    call_arguments,
    output_text,
)
from responses_app.wire.tool_types import public_tool, tool_from_stored

# Request parameters shown under "Sampling", in this order, when set (client_metadata: what
# the client says about itself, such as Codex's session and turn ids).
SAMPLING_PARAMETERS = (
    "temperature", "top_p", "presence_penalty", "frequency_penalty", "max_output_tokens", "max_tool_calls",
    "reasoning", "text", "tool_choice", "parallel_tool_calls", "truncation", "service_tier", "top_logprobs",
    "include", "user", "safety_identifier", "prompt_cache_key", "prompt_cache_retention", "context_management",
    "client_metadata",
)


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def compact_json(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def pretty_arguments(arguments: Any) -> str:
    """Tool-call arguments are a JSON string on the wire; indent them when they parse."""
    if not isinstance(arguments, str):
        return pretty_json(arguments)
    try:
        return pretty_json(json.loads(arguments))
    except ValueError:
        return arguments  # a model may emit malformed JSON; show what it said


def safe_url(url: Any) -> str | None:
    """The URL when it is http(s), else None (the template then shows it as text)."""
    if not isinstance(url, str):
        return None
    try:
        scheme = urlsplit(url.strip()).scheme.lower()
    except ValueError:
        return None
    return url if scheme in ("http", "https") else None


def link(url: Any, title: Any = None) -> dict[str, Any]:
    return {"url": url if isinstance(url, str) else "", "href": safe_url(url), "title": title or url or ""}


def request_view(request: dict[str, Any]) -> dict[str, Any]:
    """Instructions, sampling parameters, tools and metadata of a stored request."""
    sampling = []
    for name in SAMPLING_PARAMETERS:
        value = request.get(name)
        if value is None or value == [] or value == {}:
            continue
        sampling.append((name, value if isinstance(value, str | int | float | bool) else compact_json(value)))
    tools = []
    for tool in request.get("tools") or []:
        shown = public_tool(tool_from_stored(tool))  # an MCP tool's headers and token stay hidden here too
        tools.append({
            "type": shown.get("type", ""),
            "name": shown.get("name") or shown.get("server_label") or "",
            "description": shown.get("description") or shown.get("server_description") or "",
            "raw": pretty_json(shown),
        })
    metadata = request.get("metadata") or {}
    return {
        "instructions": request.get("instructions") or "",
        "sampling": sampling,
        "tools": tools,
        "metadata": sorted(metadata.items()) if isinstance(metadata, dict) else [],
    }


def usage_view(usage: dict[str, Any] | None) -> list[tuple[str, Any]]:
    if not usage:
        return []
    rows = [("input tokens", usage.get("input_tokens")),
            ("cached input tokens", (usage.get("input_tokens_details") or {}).get("cached_tokens")),
            ("output tokens", usage.get("output_tokens")),
            ("reasoning tokens", (usage.get("output_tokens_details") or {}).get("reasoning_tokens")),
            ("total tokens", usage.get("total_tokens"))]
    return [(label, value) for label, value in rows if value is not None]


def item_view(item: dict[str, Any]) -> dict[str, Any]:
    """One input or output item as the detail page shows it (``raw`` keeps the stored JSON)."""
    kind = item.get("type", "message")
    view: dict[str, Any] = {"type": kind, "id": item.get("id", ""), "status": item.get("status", ""),
                            "raw": pretty_json(item)}
    if kind == "message":
        view.update(role=item.get("role", ""), parts=_content_parts(item.get("content")))
    elif kind == "reasoning":
        view.update(summary=_texts(item.get("summary")), text=_texts(item.get("content")))
    elif kind in ("function_call", "custom_tool_call"):
        view.update(shape="call", name=item.get("name", ""), call_id=item.get("call_id", ""),
                    arguments=pretty_arguments(item.get("arguments", item.get("input", ""))))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        view.update(shape="call_output", call_id=item.get("call_id", ""), output=_text_of(item.get("output")))
    elif kind in BY_CALL_TYPE:  # shell, local_shell, apply_patch: as the model wrote the call
        view.update(shape="call", name=BY_CALL_TYPE[kind].tool_type, call_id=item.get("call_id", ""),
                    arguments=pretty_arguments(call_arguments(item)))
    elif kind in BY_OUTPUT_TYPE:
        view.update(shape="call_output", call_id=answered_call_id(item), output=pretty_arguments(output_text(item)))
    elif kind == "code_interpreter_call":
        view.update(code=item.get("code") or "", container_id=item.get("container_id", ""),
                    outputs=[_code_output(output) for output in item.get("outputs") or []])
    elif kind == "mcp_list_tools":
        view.update(server_label=item.get("server_label", ""), error=item.get("error"),
                    tools=[{"name": tool.get("name", ""), "description": tool.get("description") or ""}
                           for tool in item.get("tools") or []])
    elif kind in ("mcp_call", "mcp_approval_request"):
        view.update(server_label=item.get("server_label", ""), name=item.get("name", ""),
                    arguments=pretty_arguments(item.get("arguments", "")), output=item.get("output"),
                    error=item.get("error"), approval_request_id=item.get("approval_request_id"))
    elif kind == "mcp_approval_response":
        view.update(approval_request_id=item.get("approval_request_id", ""), approve=item.get("approve"),
                    reason=item.get("reason"))
    elif kind == "web_search_call":
        view.update(action=_web_search_action(item.get("action") or {}))
    elif kind == "file_search_call":
        view.update(queries=item.get("queries") or [], results=[
            {"filename": result.get("filename", ""), "file_id": result.get("file_id", ""),
             "score": result.get("score"), "text": result.get("text", "")} for result in item.get("results") or []])
    return view


def _content_parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content, "links": []}]
    parts = []
    for part in content or []:
        if not isinstance(part, dict):
            continue
        text = part.get("text") if "text" in part else part.get("refusal", "")
        links = [link(annotation.get("url"), annotation.get("title"))
                 for annotation in part.get("annotations") or [] if annotation.get("url")]
        parts.append({"type": part.get("type", ""), "text": text or "", "links": links})
    return parts


def _texts(parts: Any) -> list[str]:
    return [part.get("text", "") for part in parts or [] if isinstance(part, dict)]


def _text_of(output: Any) -> str:
    if isinstance(output, str):
        return output
    return pretty_json(output)


def _code_output(output: dict[str, Any]) -> dict[str, Any]:
    if output.get("type") == "image":
        return {"type": "image", "link": link(output.get("url"), "image")}
    return {"type": output.get("type", "logs"), "logs": output.get("logs", "")}


def _web_search_action(action: dict[str, Any]) -> dict[str, Any]:
    queries = action.get("queries") or ([action["query"]] if action.get("query") else [])
    return {
        "type": action.get("type", ""),
        "queries": queries,
        "link": link(action.get("url")) if action.get("url") else None,
        "pattern": action.get("pattern"),
        "sources": [link(source.get("url"), source.get("title")) for source in action.get("sources") or []
                    if isinstance(source, dict) and source.get("url")],
    }
