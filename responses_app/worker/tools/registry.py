"""The server's tools by the harmony recipient the model writes: the call of each
(``call_for``), a lost worker's open call taken over, and what runs before the first turn."""

from __future__ import annotations

from collections.abc import Callable

from responses_app.worker.tools import mcp
from responses_app.worker.tools.base import ToolCall, ToolLoopFailure
from responses_app.worker.tools.code_interpreter import CodeInterpreterCall
from responses_app.worker.tools.file_search import FileSearchCall
from responses_app.worker.tools.toolbox import Toolbox
from responses_app.worker.tools.web_search import WebSearchCall

# Toolbox.route's names -> the call of (the toolbox, the recipient's namespace, its function).
CALLS: dict[str, Callable[[Toolbox, str, str], ToolCall]] = {
    "python": lambda toolbox, namespace, name: CodeInterpreterCall(toolbox),
    "browser": lambda toolbox, namespace, name: WebSearchCall(toolbox, name),
    "file_search": lambda toolbox, namespace, name: FileSearchCall(toolbox),
    "mcp": mcp.mcp_call_for,
}


def call_for(toolbox: Toolbox, recipient: str) -> ToolCall:
    """The tool call the model is starting to write (its header named ``recipient``)."""
    route = toolbox.route(recipient)
    if route is None:
        raise ToolLoopFailure(f"The model called '{recipient}', which is not a tool of this response.")
    namespace, _, name = recipient.partition(".")
    return CALLS[route](toolbox, namespace, name)


def take_over(toolbox: Toolbox, run: bool) -> None:
    """End the open call item a lost worker left (``toolbox.adopted``): run the call
    again, or end it as interrupted (worker/continuation.py)."""
    item = toolbox.adopted or {}
    call = (CodeInterpreterCall(toolbox) if item.get("type") == "code_interpreter_call"
            else mcp.McpCall(toolbox, item["server_label"], item["name"]))
    if run:
        call.execute()
    else:
        call.interrupted()


def preparing(toolbox: Toolbox) -> bool:
    """Whether anything runs before the first turn (MCP servers to list, approved calls)."""
    return mcp.preparing(toolbox)


def prepare(toolbox: Toolbox) -> None:
    mcp.prepare(toolbox)
