"""The worker's one door into tools_app (the sandbox, MCP servers, the browser): the
server tools' modules call these functions and nothing of tools_app directly.

Each function imports what it uses when it is first called, so that a process that runs
no such call never loads the MCP client (mcp, anyio, httpx) or the sandbox. The errors
that a call reports to the model and the client come out as ``ToolError``; any other
(a container that expires while its code runs) fails the response, as it always did.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings

from responses_app.containers.files_in import copy_into_container
from responses_app.models import Tenant
from responses_app.wire.tool_types import McpTool


class ToolError(Exception):
    """A tool that could not run or failed; ``tool_error``: the tool itself answered with
    an error (an MCP server that works)."""

    def __init__(self, message: str, tool_error: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.tool_error = tool_error


# --- MCP servers -------------------------------------------------------------------------------


def list_mcp_tools(tenant_id: int, tool: McpTool) -> list[Any]:
    """The tools of the request's MCP server ``tool`` (tools_app.mcp.client.McpTool)."""
    from tools_app.mcp.client import McpError, list_tools
    from tools_app.mcp.servers import server_for_tool

    try:
        return list_tools(server_for_tool(tenant_id, tool.to_stored()), timeout_s=settings.TOOL_CALL_TIMEOUT_S)
    except McpError as error:
        raise ToolError(error.message, tool_error=error.tool_error) from error


def call_mcp_tool(tenant_id: int, tool: McpTool, name: str, arguments: dict[str, Any]) -> str:
    """The text output of the MCP server's tool ``name``."""
    from tools_app.mcp.client import McpError, call_tool
    from tools_app.mcp.servers import server_for_tool

    try:
        return call_tool(server_for_tool(tenant_id, tool.to_stored()), name, arguments,
                         timeout_s=settings.TOOL_CALL_TIMEOUT_S)
    except McpError as error:
        raise ToolError(error.message, tool_error=error.tool_error) from error


def mcp_requires_approval(tool: McpTool, name: str) -> bool:
    """Whether the request's ``require_approval`` holds a call of ``name`` for the client."""
    from tools_app.mcp.servers import requires_approval

    return requires_approval(tool.to_stored(), name)


# --- containers (code_interpreter) ---------------------------------------------------------------


def resolve_container(tenant_id: int, container_id: str | None, reuse_id: str | None) -> Any:
    """The container the tool names, or (auto: None) ``reuse_id``'s, or a new one
    (tools_app.models.Container)."""
    from tools_app.containers import ContainerNotFound
    from tools_app.containers import resolve_container as resolve

    try:
        return resolve(tenant_id, container_id if container_id is not None else {"type": "auto"}, reuse_id=reuse_id)
    except ContainerNotFound as error:
        raise ToolError(str(error)) from error


def seed_container(tenant: Tenant, container_id: str, file_ids: list[str]) -> None:
    """Copy the tool's ``file_ids`` into the container it just made."""
    from tools_app.containers import ContainerNotFound

    try:
        copy_into_container(tenant, container_id, file_ids)
    except ContainerNotFound as error:  # gone before its files were in
        raise ToolError(str(error)) from error


def run_code(container: Any, code: str) -> Any:
    """Run ``code`` in the container (tools_app.sandbox.ExecutionResult)."""
    from tools_app.containers import execute

    return execute(container, code, timeout_s=settings.TOOL_CALL_TIMEOUT_S)


def container_file_ids(container_id: str, paths: list[str]) -> dict[str, str]:
    """The ids of the container's files at ``paths`` (the ones it has)."""
    from tools_app.container_files import file_ids

    return file_ids(container_id, paths)


# --- the browser (web_search) --------------------------------------------------------------------


def browser_session(tenant_id: int, external: bool) -> tuple[Any, Callable[[str], list[dict[str, Any]]]]:
    """A browser for one response, and the annotator that cites the pages it opened."""
    from tools_app.browser.citations import url_citations
    from tools_app.browser.default_backend import default_backend
    from tools_app.browser.session import BrowserSession

    session = BrowserSession(default_backend(tenant_id, external=external))
    return session, lambda text: url_citations(text, session)


def browse(session: Any, function: str, arguments: dict[str, Any]) -> Any:
    """One browser call (search, open, find) (tools_app.browser.session.BrowserResult)."""
    from tools_app.browser.session import BrowserError

    try:
        return session.invoke(function, arguments)
    except BrowserError as error:
        raise ToolError(str(error)) from error
