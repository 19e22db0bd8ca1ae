"""MCP client sessions for synchronous callers (Celery task threads).

Every call is self-contained: it connects, initializes, does its one thing and
disconnects, all inside one ``asyncio.run`` in a thread of its own. The MCP SDK's
transports and sessions are anyio task groups; entering one in a task and leaving it
from another breaks them (a known failure of long-lived shared sessions), and a thread
per call means the caller's thread never needs (or must not have) an event loop.

Timeouts are hard: the session runs under ``timeout_s``, and should its clean-up hang
anyway, the caller stops waiting ``TIMEOUT_MARGIN_S`` later and the thread is abandoned.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp import ClientSession, MCPError
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import INTERNAL_ERROR, PaginatedRequestParams

from tools_app.url_guard import UrlRefused, guarded_http_client

T = TypeVar("T")

TRANSPORTS = ("streamable_http", "sse")
# How long after timeout_s a caller waits for a call's clean-up before giving up on it.
TIMEOUT_MARGIN_S = 2.0
# A server that pages its tool list forever must not keep us listening forever.
MAX_TOOL_PAGES = 50


@dataclass(frozen=True)
class McpServerSpec:
    """Where and how to reach one MCP server. ``headers`` may hold secrets: they are
    sent to the server and never appear in an error message."""

    label: str
    url: str
    transport: str = "streamable_http"
    headers: dict[str, str] = field(default_factory=dict)
    allowed_tools: list[str] | None = None  # None: all

    def allows(self, tool_name: str) -> bool:
        return self.allowed_tools is None or tool_name in self.allowed_tools


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str | None
    input_schema: dict
    annotations: dict | None


class McpError(Exception):
    """A failed MCP list or call. ``message`` is safe to show to the client and to the
    model: it names the server by label and host, never by its secret headers.
    ``tool_error``: the tool itself answered with an error (the server works)."""

    def __init__(self, message: str, *, tool_error: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.tool_error = tool_error


def list_tools(server: McpServerSpec, timeout_s: float) -> list[McpTool]:
    """The server's tools that ``server.allowed_tools`` lets through, in the server's order."""

    async def use(session: ClientSession) -> list[McpTool]:
        tools: list[McpTool] = []
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            result = await session.list_tools(params=_page(cursor))
            tools.extend(_tool(tool) for tool in result.tools if server.allows(tool.name))
            cursor = result.next_cursor
            if cursor is None:
                break
        return tools

    return _run(server, timeout_s, use)


def call_tool(server: McpServerSpec, name: str, arguments: dict, timeout_s: float) -> str:
    """Call tool ``name`` and return its text content, blocks joined by newlines (or its
    structured content as JSON when it has no text). Raises ``McpError`` with the tool's
    own error text when the result is an error, and for anything else that goes wrong."""
    if not server.allows(name):
        raise McpError(f"The tool '{name}' of the MCP server '{server.label}' is not among its allowed tools.")

    async def use(session: ClientSession) -> str:
        result = await session.call_tool(name, arguments)
        text = _result_text(result)
        if result.is_error:
            raise McpError(f"The tool '{name}' of the MCP server '{server.label}' failed: {text or 'no details'}",
                           tool_error=True)
        return text

    return _run(server, timeout_s, use)


def _run(server: McpServerSpec, timeout_s: float, use: Callable[[ClientSession], Awaitable[T]]) -> T:
    if server.transport not in TRANSPORTS:
        raise McpError(f"The MCP server '{server.label}' has an unknown transport '{server.transport}'.")
    outcome: dict[str, Any] = {}

    def work() -> None:
        try:
            outcome["value"] = anyio.run(_session, server, timeout_s, use)
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    thread = threading.Thread(target=work, name=f"mcp-{server.label}", daemon=True)
    thread.start()
    thread.join(timeout_s + TIMEOUT_MARGIN_S)
    if thread.is_alive():
        raise _timed_out(server, timeout_s)
    if "error" in outcome:
        raise _as_mcp_error(server, timeout_s, outcome["error"])
    return outcome["value"]


async def _session(server: McpServerSpec, timeout_s: float, use: Callable[[ClientSession], Awaitable[T]]) -> T:
    # One task from connect to disconnect; fail_after cancels all of it, clean-up included.
    http_errors: list[httpx2.Response] = []
    try:
        with anyio.fail_after(timeout_s):
            async with _transport(server, timeout_s, http_errors) as (read_stream, write_stream):
                async with ClientSession(read_stream, write_stream, read_timeout_seconds=timeout_s) as session:
                    await session.initialize()
                    return await use(session)
    except Exception as exc:
        # The streamable HTTP transport reports an HTTP error status as a bare "error
        # response": name the status, which is what an operator needs (401: credentials).
        cause = _root_cause(exc)
        if http_errors and isinstance(cause, MCPError) and cause.code == INTERNAL_ERROR:
            response = http_errors[0]
            raise McpError(f"The MCP server '{server.label}' ({_origin(server.url)}) answered HTTP "
                           f"{response.status_code} {response.reason_phrase}.".replace(" .", "."))
        raise


def _transport(server: McpServerSpec, timeout_s: float,
               http_errors: list[httpx2.Response]) -> AbstractAsyncContextManager[Any]:
    async def record_error(response: httpx2.Response) -> None:
        # POSTs only: a 405 to the optional GET stream is no failure of the call.
        if response.status_code >= 400 and response.request.method == "POST":
            http_errors.append(response)

    def client_factory(headers: dict[str, str] | None = None, timeout: httpx2.Timeout | None = None,
                       auth: httpx2.Auth | None = None) -> httpx2.AsyncClient:
        client = guarded_http_client(headers=headers, timeout=timeout, auth=auth)
        client.event_hooks["response"].append(record_error)
        return client

    headers = dict(server.headers)
    if server.transport == "sse":
        return sse_client(
            server.url,
            headers=headers,
            timeout=timeout_s,
            sse_read_timeout=timeout_s,
            httpx_client_factory=client_factory,
        )
    # streamable_http_client leaves a client it is given open: _StreamableHttp closes it.
    return _StreamableHttp(server.url, client_factory(headers=headers, timeout=httpx2.Timeout(timeout_s)))


class _StreamableHttp:
    def __init__(self, url: str, client: httpx2.AsyncClient) -> None:
        self._client = client
        self._transport = streamable_http_client(url, http_client=client)

    async def __aenter__(self) -> Any:
        await self._client.__aenter__()
        try:
            return await self._transport.__aenter__()
        except BaseException:
            await self._client.__aexit__(None, None, None)
            raise

    async def __aexit__(self, *exc_info: Any) -> bool | None:
        try:
            return await self._transport.__aexit__(*exc_info)
        finally:
            await self._client.__aexit__(None, None, None)


def _page(cursor: str | None) -> PaginatedRequestParams | None:
    return None if cursor is None else PaginatedRequestParams(cursor=cursor)


def _tool(tool: Any) -> McpTool:
    annotations = None
    if tool.annotations is not None:
        annotations = tool.annotations.model_dump(mode="json", by_alias=True, exclude_none=True)
    return McpTool(
        name=tool.name,
        description=tool.description,
        input_schema=dict(tool.input_schema or {"type": "object", "properties": {}}),
        annotations=annotations or None,
    )


def _result_text(result: Any) -> str:
    texts: list[str] = []
    for block in result.content:
        if getattr(block, "type", None) == "text":
            texts.append(block.text)
        elif getattr(block, "type", None) == "resource" and hasattr(block.resource, "text"):
            texts.append(block.resource.text)
    if texts:
        return "\n".join(texts)
    if result.structured_content is not None:
        return json.dumps(result.structured_content)
    return ""


def _timed_out(server: McpServerSpec, timeout_s: float) -> McpError:
    return McpError(f"The MCP server '{server.label}' did not answer within {timeout_s:g} seconds.")


def _as_mcp_error(server: McpServerSpec, timeout_s: float, exc: BaseException) -> McpError:
    """One client-readable error for whatever ended the call, with secrets scrubbed."""
    cause = _root_cause(exc)
    where = f"the MCP server '{server.label}' ({_origin(server.url)})"
    if isinstance(cause, McpError):
        return McpError(_scrub(cause.message, server), tool_error=cause.tool_error)
    elif isinstance(cause, UrlRefused):
        message = f"Cannot reach {where}: {cause.message}"
    elif isinstance(cause, TimeoutError | httpx2.TimeoutException):
        return _timed_out(server, timeout_s)
    elif isinstance(cause, httpx2.HTTPStatusError):
        response = cause.response
        message = f"{where} answered HTTP {response.status_code} {response.reason_phrase}".strip() + "."
        message = message[0].upper() + message[1:]
    elif isinstance(cause, httpx2.HTTPError):
        message = f"Cannot reach {where}: {cause or type(cause).__name__}."
    elif isinstance(cause, MCPError):
        message = f"Error from {where}: {cause}"
    else:
        message = f"The call to {where} failed: {type(cause).__name__}: {cause}"
    return McpError(_scrub(message, server))


def _root_cause(exc: BaseException) -> BaseException:
    """The exception that matters inside the task groups' ExceptionGroups: an error of
    ours or a refusal first, then the first leaf."""
    leaves = list(_leaves(exc))
    for kind in (McpError, UrlRefused, TimeoutError, httpx2.HTTPStatusError, httpx2.HTTPError, MCPError):
        for leaf in leaves:
            if isinstance(leaf, kind):
                return leaf
    return leaves[0] if leaves else exc


def _leaves(exc: BaseException) -> Any:
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            yield from _leaves(inner)
        return
    yield exc
    for linked in (exc.__cause__, exc.__context__):
        if isinstance(linked, McpError | UrlRefused):
            yield linked


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.hostname or ''}{f':{parts.port}' if parts.port else ''}"


def _scrub(message: str, server: McpServerSpec) -> str:
    for value in server.headers.values():
        if value:
            message = message.replace(value, "***")
            _scheme, _, credential = value.partition(" ")
            if len(credential) >= 4:
                message = message.replace(credential, "***")
    return message
