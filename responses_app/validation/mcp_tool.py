"""Validation of a create request's ``{"type": "mcp", ...}`` tools: their shape, and the
outbound policy for what it decides without the network (a URL whose host is a private
address). Which server a tool names, and whether a host name may be reached, is decided
when the tool runs (tools_app.mcp.servers)."""

from __future__ import annotations

from typing import Any, cast

from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.tool_types import NAME_PATTERN, McpTool
from tools_app.url_guard import UrlRefused, check_url_offline

APPROVAL_MODES = ("always", "never")
HANDLED_FIELDS = frozenset({"type", "server_label", "server_url", "connector_id", "allowed_tools", "require_approval",
                            "headers", "authorization", "server_description"})


def validate_mcp_tool(tool: dict[str, Any], param: str) -> McpTool:
    """A request's ``{"type": "mcp", ...}`` tool, typed, or InvalidRequest.

    ``allowed_tools`` becomes a list of names or None, ``require_approval`` "always", "never",
    ``{"always": {"tool_names": [...]}, "never": {"tool_names": [...]}}`` (either key
    optional) or None (which means "always"). Nothing is resolved or fetched here: a URL
    whose host is an address (or a metadata or localhost name) is checked against the
    outbound policy here, a host name when the tool runs.
    """
    _refuse_unknown_fields(tool, param)
    label = tool.get("server_label")
    if label is None:
        raise InvalidRequest(f"Missing required parameter: '{param}.server_label'.", param=f"{param}.server_label",
                             code="missing_required_parameter")
    if not isinstance(label, str) or not NAME_PATTERN.match(label):
        raise InvalidRequest(
            f"Invalid '{param}.server_label': {label!r}. It must be 1 to 64 letters, digits, underscores or dashes.",
            param=f"{param}.server_label", code="invalid_value")
    if tool.get("connector_id") is not None:
        raise InvalidRequest(
            "Connectors ('connector_id') are not supported by this server: give 'server_url', or the "
            "'server_label' of an MCP server that the operator registered.",
            param=f"{param}.connector_id", code="unsupported_parameter")
    allowed_tools = _allowed_tools(tool.get("allowed_tools"), f"{param}.allowed_tools")
    return McpTool(
        server_label=label,
        server_url=_server_url(tool.get("server_url"), f"{param}.server_url"),
        allowed_tools=tuple(allowed_tools) if allowed_tools is not None else None,
        require_approval=_require_approval(tool.get("require_approval"), f"{param}.require_approval"),
        headers=_headers(tool.get("headers"), f"{param}.headers"),
        authorization=_optional_string(tool.get("authorization"), f"{param}.authorization"),
        server_description=_optional_string(tool.get("server_description"), f"{param}.server_description"),
    )


def _refuse_unknown_fields(tool: dict[str, Any], param: str) -> None:
    from openai.types.responses.tool import Mcp

    for name, value in tool.items():
        if name in HANDLED_FIELDS:
            continue
        if name not in Mcp.model_fields:
            raise InvalidRequest(f"Unknown parameter: '{param}.{name}'.", param=f"{param}.{name}",
                                 code="unknown_parameter")
        if value is not None:
            raise InvalidRequest(f"The parameter '{param}.{name}' is not supported by this server.",
                                 param=f"{param}.{name}", code="unsupported_parameter")


def _server_url(value: Any, param: str) -> str | None:
    if value is None:
        return None
    from urllib.parse import urlsplit

    if not isinstance(value, str):
        raise invalid_type(param, "a string", value)
    try:
        parts = urlsplit(value)
        valid = parts.scheme.lower() in ("http", "https") and bool(parts.hostname)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number
    except ValueError:
        valid = False
    if not valid:
        raise InvalidRequest(f"Invalid '{param}': it must be an http or https URL.", param=param,
                             code="invalid_value")
    try:
        check_url_offline(value)
    except UrlRefused as refused:
        raise InvalidRequest(f"The MCP server URL is not allowed: {refused.message}.", param=param,
                             code="invalid_url") from None
    return value


def _allowed_tools(value: Any, param: str) -> list[str] | None:
    if value is None:
        return None
    if isinstance(value, dict):
        unknown = set(value) - {"tool_names", "read_only"}
        if unknown:
            name = sorted(unknown)[0]
            raise InvalidRequest(f"Unknown parameter: '{param}.{name}'.", param=f"{param}.{name}",
                                 code="unknown_parameter")
        if value.get("read_only"):
            raise InvalidRequest(f"'{param}.read_only' is not supported by this server: list the tool names.",
                                 param=f"{param}.read_only", code="unsupported_parameter")
        if value.get("tool_names") is None:
            return None
        return _tool_names(value["tool_names"], f"{param}.tool_names")
    if isinstance(value, list):
        return _tool_names(value, param)
    raise invalid_type(param, 'an array of strings or {"tool_names": [...]}', value)


def _require_approval(value: Any, param: str) -> str | dict[str, Any] | None:
    if value is None or value in APPROVAL_MODES:
        return cast(str | None, value)
    if not isinstance(value, dict):
        raise InvalidRequest(
            f"Invalid '{param}': expected 'always', 'never' or "
            '{"always": {"tool_names": [...]}, "never": {"tool_names": [...]}}.', param=param, code="invalid_value")
    unknown = set(value) - set(APPROVAL_MODES)
    if unknown:
        name = sorted(unknown)[0]
        raise InvalidRequest(f"Unknown parameter: '{param}.{name}'.", param=f"{param}.{name}",
                             code="unknown_parameter")
    policy: dict[str, dict[str, list[str]]] = {}
    for mode in APPROVAL_MODES:
        entry = value.get(mode)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise invalid_type(f"{param}.{mode}", 'an object {"tool_names": [...]}', entry)
        unknown = set(entry) - {"tool_names", "read_only"}
        if unknown or entry.get("read_only"):
            name = sorted(unknown)[0] if unknown else "read_only"
            raise InvalidRequest(f"The parameter '{param}.{mode}.{name}' is not supported by this server.",
                                 param=f"{param}.{mode}.{name}", code="unsupported_parameter")
        policy[mode] = {"tool_names": _tool_names(entry.get("tool_names") or [], f"{param}.{mode}.tool_names")}
    return policy


def _tool_names(value: Any, param: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(name, str) for name in value):
        raise invalid_type(param, "an array of strings", value)
    return list(dict.fromkeys(value))  # order kept, duplicates dropped


def _headers(value: Any, param: str) -> dict[str, str] | None:
    if value is None:
        return None
    if not isinstance(value, dict):
        raise invalid_type(param, "an object of strings", value)
    for name, header in value.items():
        if not isinstance(header, str):
            raise invalid_type(f"{param}.{name}", "a string", header)
        if not name or any(ch in name + header for ch in "\r\n\0"):
            raise InvalidRequest(f"Invalid header '{param}.{name}'.", param=f"{param}.{name}", code="invalid_value")
    return dict(value)


def _optional_string(value: Any, param: str) -> str | None:
    if value is not None and not isinstance(value, str):
        raise invalid_type(param, "a string", value)
    return value
