"""MCP servers as tools (``type: "mcp"``): their listing before the first turn
(``mcp_list_tools``), their calls (``mcp_call``), a call held for the client's approval
(``mcp_approval_request``) and the approved calls of the next request."""

from __future__ import annotations

from typing import Any

from openai.types import responses as types

from responses_app.lib.ids import new_id
from responses_app.wire.tool_types import McpTool
from responses_app.worker.tools import tools_app_adapter
from responses_app.worker.tools.base import INTERRUPTED, ToolLoopFailure, ToolResult, WholeCall, json_object
from responses_app.worker.tools.toolbox import Toolbox
from responses_app.worker.tools.tools_app_adapter import ToolError

MCP_INTERNAL_ERROR = -32603  # JSON-RPC's code for an error that is not the tool's own


def preparing(toolbox: Toolbox) -> bool:
    """Whether ``prepare`` has anything to do (MCP servers to list, approved calls to run)."""
    return bool(toolbox.mcp_servers) or any(item.get("type") == "mcp_approval_response" for item in toolbox.history)


def prepare(toolbox: Toolbox) -> None:
    """List the tools of MCP servers the conversation has not listed yet, and run the
    calls that the client approved in this request's input."""
    history, builder = toolbox.history, toolbox.builder
    listed = {item.get("server_label") for item in history + builder.output
              if item.get("type") == "mcp_list_tools" and not item.get("error")
              and item is not builder.open_item}  # a lost worker's listing is made again
    for label, tool in toolbox.mcp_servers.items():
        if label not in listed:
            _list_tools(toolbox, label, tool)
    approvals = {item["id"]: item for item in history if item.get("type") == "mcp_approval_request"}
    # An approval answered earlier in the chain (or before a retry of this response) ran then.
    done = {item.get("approval_request_id") for item in history + builder.output if item.get("type") == "mcp_call"}
    for item in history:
        if item.get("type") != "mcp_approval_response" or not item.get("approve"):
            continue
        request = approvals.get(item["approval_request_id"])
        if request is None or request["id"] in done:
            continue
        call = McpCall(toolbox, request["server_label"], request["name"], approval_request_id=request["id"])
        call.finished(request.get("arguments") or "{}")
        call.execute()


def _list_tools(toolbox: Toolbox, label: str, tool: McpTool) -> None:
    builder = toolbox.builder
    toolbox.start_item({"id": new_id("mcpl"), "type": "mcp_list_tools", "server_label": label, "tools": []},
                       types.ResponseMcpListToolsInProgressEvent, "response.mcp_list_tools.in_progress")
    toolbox.flush()
    try:
        listed = toolbox.wait(lambda: tools_app_adapter.list_mcp_tools(toolbox.response.tenant_id, tool))
    except ToolError as error:
        builder.update_item(error=error.message)
        builder.item_event(types.ResponseMcpListToolsFailedEvent, "response.mcp_list_tools.failed")
        builder.finish_item(None)
        raise ToolLoopFailure(f"Could not list the tools of MCP server '{label}': {error.message}") from error
    builder.update_item(tools=[
        {"name": entry.name, "description": entry.description, "input_schema": entry.input_schema,
         **({"annotations": entry.annotations} if entry.annotations else {})}
        for entry in listed])
    builder.item_event(types.ResponseMcpListToolsCompletedEvent, "response.mcp_list_tools.completed")
    builder.finish_item(None)


def mcp_call_for(toolbox: Toolbox, label: str, name: str) -> McpCall | McpApprovalRequest:
    """The call of the server's tool ``name``: made, or held for the client's approval."""
    if tools_app_adapter.mcp_requires_approval(toolbox.mcp_servers[label], name):
        return McpApprovalRequest(toolbox, label, name)
    return McpCall(toolbox, label, name)


class McpCall:
    def __init__(self, toolbox: Toolbox, label: str, name: str, approval_request_id: str | None = None) -> None:
        self.toolbox = toolbox
        self.builder = toolbox.builder
        self.label = label
        self.name = name
        item = {"id": new_id("mcp"), "type": "mcp_call", "server_label": label, "name": name, "arguments": "",
                "status": "in_progress"}
        if approval_request_id is not None:
            item["approval_request_id"] = approval_request_id
        item, _ = toolbox.start_item(item, types.ResponseMcpCallInProgressEvent, "response.mcp_call.in_progress")
        self.arguments: str = item["arguments"]

    def delta(self, text: str) -> None:
        self.arguments += text
        self.builder.update_item(arguments=self.arguments)
        self.builder.item_event(types.ResponseMcpCallArgumentsDeltaEvent, "response.mcp_call_arguments.delta",
                                delta=text)

    def finished(self, text: str) -> None:
        self.arguments = text
        self.builder.update_item(arguments=text)
        self.builder.item_event(types.ResponseMcpCallArgumentsDoneEvent, "response.mcp_call_arguments.done",
                                arguments=text)

    def execute(self) -> ToolResult:
        refusal = self.toolbox.take_call()
        if refusal is not None:
            return self._failed(refusal, tool_error=True)
        self.toolbox.flush()
        tool = self.toolbox.mcp_servers[self.label]
        try:
            arguments = json_object(self.arguments)
            output = self.toolbox.wait(lambda: tools_app_adapter.call_mcp_tool(
                self.toolbox.response.tenant_id, tool, self.name, arguments))
        except ToolError as error:
            return self._failed(error.message, tool_error=error.tool_error)
        except ValueError as error:
            return self._failed(str(error))
        self.builder.update_item(output=output, status="completed")
        self.builder.item_event(types.ResponseMcpCallCompletedEvent, "response.mcp_call.completed")
        self.builder.finish_item("completed")
        return ToolResult(author=f"{self.label}.{self.name}", text=output, channel="commentary")

    def interrupted(self) -> None:
        """The call was running on a worker that was lost: it may have run in part."""
        self._failed(INTERRUPTED)

    def _failed(self, message: str, tool_error: bool = False) -> ToolResult:
        # The SDK's McpToolCallError: what the tool itself reported, or a failure to reach it.
        error: dict[str, Any]
        if tool_error:
            error = {"type": "mcp_tool_execution_error", "content": [{"type": "text", "text": message}]}
        else:
            error = {"type": "mcp_protocol_error", "code": MCP_INTERNAL_ERROR, "message": message}
        self.builder.update_item(error=error)
        self.builder.item_event(types.ResponseMcpCallFailedEvent, "response.mcp_call.failed")
        self.builder.finish_item("failed")
        return ToolResult(author=f"{self.label}.{self.name}", text=f"Error: {message}", channel="commentary")


class McpApprovalRequest(WholeCall):
    """A call that needs the client's approval: the response ends with an
    ``mcp_approval_request``; an ``mcp_approval_response`` in the next request runs or skips it."""

    def __init__(self, toolbox: Toolbox, label: str, name: str) -> None:
        self.builder = toolbox.builder
        self.label = label
        self.name = name

    def execute(self) -> None:
        self.builder.add_item({"id": new_id("mcpr"), "type": "mcp_approval_request", "server_label": self.label,
                               "name": self.name, "arguments": self.arguments})
        self.builder.finish_item(None)
