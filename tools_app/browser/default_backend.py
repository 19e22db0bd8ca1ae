"""The search backend web_search uses: the local index, or a registered MCP server.

A module of its own because choosing a backend imports both backends, and both import
the contract (backends.py).
"""

from __future__ import annotations

from django.conf import settings

from tools_app.browser.backends import BackendError, SearchBackend


def default_backend(tenant_id: int, external: bool = True) -> SearchBackend:
    """The backend web_search uses for `tenant_id`.

    The local SQLite index unless settings.WEB_SEARCH_MCP_SERVER names the label of a
    registered MCP server and `external` (the tool's ``external_web_access``, which asks
    for the offline index when false), in which case search goes through that server; when that
    server cannot be used (unknown label, refused URL) this raises BackendError. The
    imports are local because the MCP modules are heavy, and the local index needs none.
    """
    label = getattr(settings, "WEB_SEARCH_MCP_SERVER", "") or ""
    if label and external:
        from tools_app.browser.mcp_backend import McpSearchBackend
        from tools_app.mcp.client import McpError
        from tools_app.mcp.servers import server_for_tool

        try:
            server = server_for_tool(tenant_id, {"type": "mcp", "server_label": label})
        except McpError as error:
            raise BackendError(f"Web search is not available: {error}") from error
        return McpSearchBackend(server)

    from tools_app.browser.local_index import LocalIndex, LocalIndexBackend

    return LocalIndexBackend(LocalIndex(settings.WEB_SEARCH_INDEX_PATH))
