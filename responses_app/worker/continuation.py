"""Continuing a response whose worker was lost after it had written output (the reaper
re-queued it: services/recovery.py). The new worker starts where the committed stream
stops (stream/resume.py), so that a client sees a pause and then the rest of the answer,
with no event repeated or contradicted.

What happens to the item the lost worker left open is one rule, by what its committed
events say:

- text the model was writing (reasoning, a message, a function or custom tool call's
  arguments, a code interpreter's code, an MCP call's arguments) is *reopened*: the
  prompt is the response's prompt and the output before the item, then the item's start
  as it stands (harmony/continuations.reopened_item_prefix), and the model goes on writing it;
- a server-side call whose arguments were whole is *run again* when running it twice is
  harmless: a read-only MCP tool (readOnlyHint), a web search or a file search (the model
  writes its call again into the same item), a code interpreter call that had not
  started, an MCP server's tool listing;
- a code interpreter or MCP call that may have been running is *interrupted*: it ends
  failed, with an output saying so, and the model goes on from there (it may call again);
- a reasoning item whose summary was being written gets the rest of its summary.

Client tool calls already put out are the client's; a response whose last item ended it
(a client call, a final answer, an approval request) ends without an engine call.
"""

from __future__ import annotations

from typing import Any, Literal

from responses_app.harmony.client_tools import BY_CALL_TYPE
from responses_app.models import ResponseStatus
from responses_app.stream.resume import ResumePoint
from responses_app.worker.tools.base import SERVER_CALL_TYPES

Action = Literal["reopen", "rerun", "interrupt", "summarize"]

# Items after which the response waits for the client: it ended with them.
CLIENT_TURN_TYPES = frozenset({"function_call", "custom_tool_call", "mcp_approval_request", *BY_CALL_TYPE})
# Items that show the model has called a tool (a forced tool_choice is then honoured).
CALL_TYPES = CLIENT_TURN_TYPES | SERVER_CALL_TYPES | {"tool_search_call"}


def open_item_action(point: ResumePoint, read_only: bool) -> Action:
    """What becomes of the open item. ``read_only``: an MCP call's tool is marked read-only."""
    item, events = point.open_item, point.open_item_events
    if item is None:
        raise ValueError("no open item")
    kind = item["type"]
    if kind == "reasoning" and point.summarizing:
        return "summarize"
    if kind in ("reasoning", "message", "function_call", "custom_tool_call", "web_search_call", "file_search_call"):
        return "reopen"
    if kind == "code_interpreter_call":
        if "response.code_interpreter_call.interpreting" in events:
            return "interrupt"
        return "rerun" if "response.code_interpreter_call_code.done" in events else "reopen"
    if kind == "mcp_call":
        if "response.mcp_call_arguments.done" not in events:
            return "reopen"
        return "rerun" if read_only else "interrupt"
    if kind in ("mcp_list_tools", "compaction"):
        return "rerun"
    raise ValueError(f"an open {kind} item cannot be continued")


def ended_with(output: list[dict[str, Any]]) -> tuple[str, dict[str, Any] | None] | None:
    """The response's end, when its closed output already shows it (the worker was lost
    between its last item and its terminal event); None when the model has more to write."""
    if not output:
        return None
    last = output[-1]
    if last.get("status") == "incomplete":
        return ResponseStatus.INCOMPLETE, {"reason": "max_output_tokens"}
    if last["type"] in CLIENT_TURN_TYPES or (last["type"] == "tool_search_call" and last.get("execution") == "client"):
        return ResponseStatus.COMPLETED, None
    if last["type"] == "message" and last.get("phase") != "commentary":
        return ResponseStatus.COMPLETED, None
    return None


def has_called(output: list[dict[str, Any]]) -> bool:
    return any(item["type"] in CALL_TYPES for item in output)
