"""The server a request's ``mcp`` tool names at run time (given by URL, or registered by
an operator under its label), and which of its calls need the client's approval. The
tool's shape is checked at create time by the API's request validation."""

from __future__ import annotations

from django.db.models import Q

from tools_app.mcp.client import McpError, McpServerSpec
from tools_app.url_guard import UrlRefused, check_url


def server_for_tool(tenant_id: int, tool: dict) -> McpServerSpec:
    """The server a validated ``mcp`` tool names, its URL checked against the outbound
    policy. Raises McpError (a message fit for the client and the model) when there is none
    or its URL is refused.

    With ``server_url`` the request's own headers (and ``authorization`` as a bearer token)
    go to that URL. Without, the label names a server registered by the operator that this
    tenant may use: its URL, transport and secret headers, none of which the request sees.
    """
    label = tool["server_label"]
    allowed_tools = tool.get("allowed_tools")
    if tool.get("server_url"):
        headers = dict(tool.get("headers") or {})
        if tool.get("authorization"):
            headers["Authorization"] = f"Bearer {tool['authorization']}"
        spec = McpServerSpec(label=label, url=tool["server_url"], headers=headers, allowed_tools=allowed_tools)
    else:
        spec = _registered_server(tenant_id, label, allowed_tools)
    try:
        check_url(spec.url)
    except UrlRefused as exc:
        raise McpError(f"The MCP server '{label}' may not be used: {exc.message}")
    return spec


def requires_approval(tool: dict, tool_name: str) -> bool:
    """Whether a call of ``tool_name`` must wait for the client's approval, under the tool's
    normalised ``require_approval``. As in OpenAI's API, anything not marked "never" must."""
    policy = tool.get("require_approval")
    if policy is None or policy == "always":
        return True
    if policy == "never":
        return False
    if tool_name in ((policy.get("always") or {}).get("tool_names") or []):
        return True
    return tool_name not in ((policy.get("never") or {}).get("tool_names") or [])


def _registered_server(tenant_id: int, label: str, allowed_tools: list[str] | None) -> McpServerSpec:
    from tools_app.models import McpServer

    server = (McpServer.objects.filter(label=label)
              .filter(Q(tenants__isnull=True) | Q(tenants__id=tenant_id))
              .distinct().first())
    if server is None:
        # One message for "no such label" and "not yours": labels of other tenants stay private.
        raise McpError(f"No MCP server labelled '{label}' is available: give its 'server_url', "
                       f"or ask the operator to register it for you.")
    headers = {str(name): str(value) for name, value in (server.headers or {}).items()}
    return McpServerSpec(label=label, url=server.server_url, transport=server.transport, headers=headers,
                         allowed_tools=allowed_tools)
