"""The worker's server-side tools, as output items: each tool call the model makes becomes
one persisted, streamed item (added -> in_progress -> argument/code deltas -> the tool runs
-> completed or failed -> output_item.done with the real result).

A ``Toolbox`` holds one response's tools. ``call_for`` turns a harmony recipient into a
``ToolCall`` that follows the model's message as it streams and then runs the tool; the
generation loop feeds the ``ToolResult`` back to the model as the tool's harmony message. Running a
tool is tools_app's business (sandbox, MCP, browser); this module only knows items/events.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from django.conf import settings
from django.db import close_old_connections, connection
from openai import BaseModel
from openai.types import responses as types

from responses_app.files.containers import copy_into_container
from responses_app.harmony import file_search
from responses_app.harmony.file_search import file_citations
from responses_app.harmony.prompt import BROWSER_NAMESPACE, PYTHON_RECIPIENT
from responses_app.lib.ids import new_id
from responses_app.models import Response
from responses_app.stream.builder import EventBuilder
from responses_app.vector_stores.store import file_search_results
from responses_app.wire.tool_types import WEB_SEARCH_TYPES

log = logging.getLogger(__name__)
T = TypeVar("T")


# The server-side tool calls, as output items (max_tool_calls counts them).
SERVER_CALL_TYPES = frozenset({"code_interpreter_call", "web_search_call", "file_search_call", "mcp_call"})
# The output of a call whose worker was lost while it ran (worker/continuation.py): the
# model reads it, and may call again.
INTERRUPTED = ("The call was interrupted: the server running it was lost while it ran. It may have run in part or "
               "in full; check its effects before calling it again.")


class ToolLoopFailure(Exception):
    """Ends the response as failed: a tool's server cannot be used at all."""


@dataclass(frozen=True)
class ToolResult:
    """The tool's harmony message back to the model."""

    author: str  # python, browser.search, <server_label>.<tool>
    text: str
    channel: str
    loaded: tuple[dict[str, Any], ...] = ()  # the tools a tool search loaded, declared after the text


class ToolCall(Protocol):
    def delta(self, text: str) -> None: ...

    def finished(self, text: str) -> None: ...

    def execute(self) -> ToolResult | None:
        """Run the tool; None when the response must end here (an approval request)."""


class Waiter(Protocol):
    """Runs a blocking call for the response's code and returns its value (run_in_thread,
    with the response's tick bound)."""

    def __call__(self, work: Callable[[], T], /) -> T: ...


def run_in_thread(work: Callable[[], T], tick: Callable[[], None], poll_s: float = 0.2) -> T:
    """Run a tool in its own thread while this one keeps the lease and watches for cancel
    (``tick`` may raise CancelRequested: the tool then finishes or times out on its own)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        close_old_connections()
        try:
            outcome["value"] = work()
        except BaseException as error:  # handed to the waiting thread
            outcome["error"] = error
        finally:
            connection.close()

    thread = threading.Thread(target=target, name="tool-call", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(poll_s)
        tick()
    if "error" in outcome:
        raise outcome["error"]
    value: T = outcome["value"]
    return value


class Toolbox:
    def __init__(self, response: Response, builder: EventBuilder, history: list[dict[str, Any]],
                 flush: Callable[[], None], wait: Waiter) -> None:
        self.response = response
        self.builder = builder
        self.history = history
        self.flush = flush  # commit pending events, so clients see a tool start before it runs
        self.wait = wait
        request = response.request
        tools: list[dict[str, Any]] = [] if request.get("tool_choice") == "none" else request.get("tools", [])
        self.code_interpreter = next((tool for tool in tools if tool["type"] == "code_interpreter"), None)
        self.web_search = next((tool for tool in tools if tool["type"] in WEB_SEARCH_TYPES), None)
        self.file_search = next((tool for tool in tools if tool["type"] == "file_search"), None)
        self.mcp_servers = {tool["server_label"]: tool for tool in tools if tool["type"] == "mcp"}
        self.max_tool_calls: int | None = request.get("max_tool_calls")
        # A continued response: the calls its lost worker ran count, and the call item it
        # left open is taken over by the next call of that kind (worker/continuation.py).
        self.calls = sum(item.get("type") in SERVER_CALL_TYPES for item in builder.output
                         if item is not builder.open_item)
        self.adopted: dict[str, Any] | None = None
        self.adopted_events: frozenset[str] = frozenset()
        self._container: Any = None
        self._browser: Any = None
        if self.file_search is not None:
            # From the stored items, so that a continued response cites the searches that a
            # lost worker ran as well.
            self.add_annotator(lambda text: file_citations(
                text, (item for item in builder.output if item.get("type") == "file_search_call")))

    # --- before the first turn --------------------------------------------------------------

    def preparing(self) -> bool:
        """Whether ``prepare`` has anything to do (MCP servers to list, approved calls to run)."""
        return bool(self.mcp_servers) or any(item.get("type") == "mcp_approval_response" for item in self.history)

    def prepare(self) -> None:
        """List the tools of MCP servers the conversation has not listed yet, and run the
        calls that the client approved in this request's input."""
        listed = {item.get("server_label") for item in self.history + self.builder.output
                  if item.get("type") == "mcp_list_tools" and not item.get("error")
                  and item is not self.builder.open_item}  # a lost worker's listing is made again
        for label, tool in self.mcp_servers.items():
            if label not in listed:
                self._list_mcp_tools(label, tool)
        approvals = {item["id"]: item for item in self.history if item.get("type") == "mcp_approval_request"}
        # An approval answered earlier in the chain (or before a retry of this response) ran then.
        done = {item.get("approval_request_id") for item in self.history + self.builder.output
                if item.get("type") == "mcp_call"}
        for item in self.history:
            if item.get("type") != "mcp_approval_response" or not item.get("approve"):
                continue
            request = approvals.get(item["approval_request_id"])
            if request is None or request["id"] in done:
                continue
            call = McpCall(self, request["server_label"], request["name"], approval_request_id=request["id"])
            call.finished(request.get("arguments") or "{}")
            call.execute()

    def _list_mcp_tools(self, label: str, tool: dict[str, Any]) -> None:
        from tools_app.mcp.client import McpError, list_tools
        from tools_app.mcp.servers import server_for_tool

        self.start_item({"id": new_id("mcpl"), "type": "mcp_list_tools", "server_label": label, "tools": []},
                        types.ResponseMcpListToolsInProgressEvent, "response.mcp_list_tools.in_progress")
        self.flush()
        try:
            listed = self.wait(lambda: list_tools(server_for_tool(self.response.tenant_id, tool),
                                                  timeout_s=settings.TOOL_CALL_TIMEOUT_S))
        except McpError as error:
            self.builder.update_item(error=error.message)
            self.builder.item_event(types.ResponseMcpListToolsFailedEvent, "response.mcp_list_tools.failed")
            self.builder.finish_item(None)
            raise ToolLoopFailure(f"Could not list the tools of MCP server '{label}': {error.message}") from error
        self.builder.update_item(tools=[
            {"name": entry.name, "description": entry.description, "input_schema": entry.input_schema,
             **({"annotations": entry.annotations} if entry.annotations else {})}
            for entry in listed])
        self.builder.item_event(types.ResponseMcpListToolsCompletedEvent, "response.mcp_list_tools.completed")
        self.builder.finish_item(None)

    # --- during the turns -------------------------------------------------------------------

    def start_item(self, item: dict[str, Any], in_progress: type[BaseModel], event_type: str
                   ) -> tuple[dict[str, Any], frozenset[str]]:
        """Open a call's ``item`` and send its in_progress event; or take over the item of
        this call that a lost worker left open, whose events it committed are returned."""
        adopted, self.adopted = self.adopted, None
        if adopted is not None and adopted["type"] == item["type"]:
            return adopted, self.adopted_events
        self.builder.add_item(item)
        self.builder.item_event(in_progress, event_type)
        return item, frozenset()

    def take_over(self, run: bool) -> None:
        """End the open call item a lost worker left (``adopted``): run the call again, or
        end it as interrupted (worker/continuation.py)."""
        item = self.adopted or {}
        call = (CodeInterpreterCall(self) if item.get("type") == "code_interpreter_call"
                else McpCall(self, item["server_label"], item["name"]))
        if run:
            call.execute()
        else:
            call.interrupted()

    def read_only(self, label: str, name: str) -> bool:
        """Whether the MCP server's listing marks the tool read-only (readOnlyHint)."""
        for item in reversed(self.history + self.builder.output):
            if item.get("type") == "mcp_list_tools" and item.get("server_label") == label:
                tool: dict[str, Any] = next((tool for tool in item.get("tools") or [] if tool.get("name") == name), {})
                return bool((tool.get("annotations") or {}).get("readOnlyHint"))
        return False

    def call_for(self, recipient: str) -> ToolCall:
        """The tool call the model is starting to write (its header named ``recipient``)."""
        route = self._route(recipient)
        if route is None:
            raise ToolLoopFailure(f"The model called '{recipient}', which is not a tool of this response.")
        namespace, _, name = recipient.partition(".")
        if route == "python":
            return CodeInterpreterCall(self)
        if route == "browser":
            return WebSearchCall(self, name)
        if route == "file_search":
            return FileSearchCall(self)
        from tools_app.mcp.servers import requires_approval

        if requires_approval(self.mcp_servers[namespace], name):
            return McpApprovalRequest(self, namespace, name)
        return McpCall(self, namespace, name)

    def _route(self, recipient: str) -> str | None:
        namespace = recipient.partition(".")[0]
        if recipient == PYTHON_RECIPIENT and self.code_interpreter is not None:
            return "python"
        if namespace == BROWSER_NAMESPACE and self.web_search is not None:
            return "browser"
        if recipient == file_search.RECIPIENT and self.file_search is not None:
            return "file_search"
        if namespace in self.mcp_servers and "." in recipient:
            return "mcp"
        return None

    def take_call(self) -> str | None:
        """Count a server-side call; the reason it may not run, if the limit is reached."""
        if self.max_tool_calls is not None and self.calls >= self.max_tool_calls:
            return (f"This tool is unavailable: the response reached its limit of {self.max_tool_calls} tool "
                    "calls (max_tool_calls). Answer with the information you have.")
        self.calls += 1
        return None

    # --- tool state -------------------------------------------------------------------------

    def container(self) -> Any:
        """The code interpreter's container: the one named in the tool, or (auto) the one the
        conversation used last, or a new one. Raises ContainerNotFound."""
        if self._container is None:
            from tools_app.containers import resolve_container

            earlier = [item.get("container_id") for item in self.history + self.builder.output
                       if item.get("type") == "code_interpreter_call"]
            assert self.code_interpreter is not None  # its calls are routed only when the tool is given
            spec = self.code_interpreter["container"]
            reuse_id = earlier[-1] if earlier else None
            self._container = resolve_container(self.response.tenant_id, spec, reuse_id=reuse_id)
            if isinstance(spec, dict) and spec.get("file_ids") and self._container.pk != reuse_id:
                copy_into_container(self.response.tenant, self._container.pk, spec["file_ids"])  # a new one
        return self._container

    def browser(self) -> Any:
        if self._browser is None:
            from tools_app.browser.citations import url_citations
            from tools_app.browser.default_backend import default_backend
            from tools_app.browser.session import BrowserSession

            external = (self.web_search or {}).get("external_web_access", True)
            session = BrowserSession(default_backend(self.response.tenant_id, external=external))
            self._browser = session
            self.add_annotator(lambda text: url_citations(text, session))
        return self._browser

    def add_annotator(self, annotator: Callable[[str], list[dict[str, Any]]]) -> None:
        """Annotate the answer's text with ``annotator``'s citations too."""
        earlier = self.builder.annotator
        self.builder.annotator = annotator if earlier is None else lambda text: earlier(text) + annotator(text)


# --- code_interpreter --------------------------------------------------------------------------


class CodeInterpreterCall:
    def __init__(self, toolbox: Toolbox) -> None:
        from tools_app.containers import ContainerNotFound

        self.toolbox = toolbox
        self.builder = toolbox.builder
        self.error: str | None = None
        try:
            container_id = toolbox.container().id
        except ContainerNotFound as error:
            assert toolbox.code_interpreter is not None  # a call is routed here only when the tool is given
            container_id, self.error = str(toolbox.code_interpreter["container"]), str(error)
        item, _ = toolbox.start_item({"id": new_id("ci"), "type": "code_interpreter_call", "status": "in_progress",
                                      "code": "", "container_id": container_id, "outputs": None},
                                     types.ResponseCodeInterpreterCallInProgressEvent,
                                     "response.code_interpreter_call.in_progress")
        self.code: str = item["code"]

    def delta(self, text: str) -> None:
        self.code += text
        self.builder.update_item(code=self.code)
        self.builder.item_event(types.ResponseCodeInterpreterCallCodeDeltaEvent,
                                "response.code_interpreter_call_code.delta", delta=text)

    def finished(self, text: str) -> None:
        self.code = text
        self.builder.update_item(code=text)
        self.builder.item_event(types.ResponseCodeInterpreterCallCodeDoneEvent,
                                "response.code_interpreter_call_code.done", code=text)

    def execute(self) -> ToolResult:
        from tools_app.container_files import file_ids
        from tools_app.containers import execute

        refusal = self.error or self.toolbox.take_call()
        if refusal is not None:
            return self._end([{"type": "logs", "logs": refusal}], failed=True)
        self.builder.item_event(types.ResponseCodeInterpreterCallInterpretingEvent,
                                "response.code_interpreter_call.interpreting")
        self.toolbox.flush()
        container = self.toolbox.container()
        result = self.toolbox.wait(lambda: execute(container, self.code, timeout_s=settings.TOOL_CALL_TIMEOUT_S))
        logs = result.logs
        if result.error:
            logs = f"{logs}\n{result.error}" if logs else result.error
        outputs: list[dict[str, Any]] = [{"type": "logs", "logs": logs}]
        ids = file_ids(container.id, [path for path in result.files if path.lower().endswith(IMAGE_SUFFIXES)])
        outputs += [{"type": "image", "url": container_file_url(container.id, ids[path])}
                    for path in result.files if path in ids]
        if result.files:
            logs += "\n[files written to /mnt/data: " + ", ".join(result.files) + "]"
        return self._end(outputs, failed=bool(result.error), model_text=logs)

    def interrupted(self) -> None:
        """The call was running on a worker that was lost: it may have run in part."""
        self._end([{"type": "logs", "logs": INTERRUPTED}], failed=True)

    def _end(self, outputs: list[dict[str, Any]], failed: bool, model_text: str | None = None) -> ToolResult:
        self.builder.update_item(outputs=outputs)
        if not failed:
            self.builder.item_event(types.ResponseCodeInterpreterCallCompletedEvent,
                                    "response.code_interpreter_call.completed")
        self.builder.finish_item("failed" if failed else "completed")
        text = model_text if model_text is not None else "".join(o.get("logs", "") for o in outputs)
        return ToolResult(author=PYTHON_RECIPIENT, text=text, channel="analysis")


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg")


def container_file_url(container_id: str, file_id: str) -> str:
    return f"{settings.PUBLIC_BASE_URL}/v1/containers/{container_id}/files/{file_id}/content"


# --- web_search (harmony browser) ---------------------------------------------------------------


class WebSearchCall:
    def __init__(self, toolbox: Toolbox, function: str) -> None:
        self.toolbox = toolbox
        self.builder = toolbox.builder
        self.function = function
        self.arguments = ""
        # As OpenAI does, the action is known (and shown) once the search ran.
        _, self.committed = toolbox.start_item({"id": new_id("ws"), "type": "web_search_call",
                                                "status": "in_progress", "action": {"type": "search"}},
                                               types.ResponseWebSearchCallInProgressEvent,
                                               "response.web_search_call.in_progress")

    def delta(self, text: str) -> None:
        """Browser arguments are not streamed to the client (the API has no such event)."""

    def finished(self, text: str) -> None:
        self.arguments = text

    def execute(self) -> ToolResult:
        from tools_app.browser.session import BrowserError

        author = f"{BROWSER_NAMESPACE}.{self.function}"
        refusal = self.toolbox.take_call()
        if refusal is not None:
            return self._failed(author, refusal)
        if "response.web_search_call.searching" not in self.committed:  # a lost worker's search is run again
            self.builder.item_event(types.ResponseWebSearchCallSearchingEvent, "response.web_search_call.searching")
        self.toolbox.flush()
        try:
            arguments = _json_object(self.arguments)
            browser = self.toolbox.browser()
            result = self.toolbox.wait(lambda: browser.invoke(self.function, arguments))
        except (BrowserError, ValueError) as error:
            return self._failed(author, str(error))
        self.builder.update_item(action=result.action)
        self.builder.item_event(types.ResponseWebSearchCallCompletedEvent, "response.web_search_call.completed")
        self.builder.finish_item("completed")
        return ToolResult(author=author, text=result.text, channel="analysis")

    def _failed(self, author: str, message: str) -> ToolResult:
        self.builder.finish_item("failed")
        return ToolResult(author=author, text=f"Error: {message}", channel="analysis")


# --- file_search (harmony/file_search.py) --------------------------------------------------------


class FileSearchCall:
    def __init__(self, toolbox: Toolbox) -> None:
        self.toolbox = toolbox
        self.builder = toolbox.builder
        self.arguments = ""
        _, self.committed = toolbox.start_item({"id": new_id("fs"), "type": "file_search_call",
                                                "status": "in_progress", "queries": [], "results": None},
                                               types.ResponseFileSearchCallInProgressEvent,
                                               "response.file_search_call.in_progress")

    def delta(self, text: str) -> None:
        """The queries are shown once whole (the API has no event for their deltas)."""

    def finished(self, text: str) -> None:
        self.arguments = text

    def execute(self) -> ToolResult:
        refusal = self.toolbox.take_call()
        if refusal is not None:
            return self._failed(refusal)
        try:
            queries = file_search.read_queries(self.arguments)
        except ValueError as error:
            return self._failed(f"the call could not be read: {error}. Call it again.")
        self.builder.update_item(queries=queries, status="searching")
        if "response.file_search_call.searching" not in self.committed:
            self.builder.item_event(types.ResponseFileSearchCallSearchingEvent, "response.file_search_call.searching")
        self.toolbox.flush()
        assert self.toolbox.file_search is not None  # a call is routed here only when the tool is given
        try:  # one indexed query: here, in the call's thread, with no thread of its own
            results = file_search_results(self.toolbox.response.tenant_id, self.toolbox.file_search, queries)
        except LookupError as error:  # a store deleted or expired since the create
            return self._failed(str(error))
        self.builder.update_item(results=results)
        self.builder.item_event(types.ResponseFileSearchCallCompletedEvent, "response.file_search_call.completed")
        self.builder.finish_item("completed")
        return ToolResult(author=file_search.RECIPIENT, text=file_search.results_text(results), channel="analysis")

    def _failed(self, message: str) -> ToolResult:
        self.builder.finish_item("failed")
        return ToolResult(author=file_search.RECIPIENT, text=f"Error: {message}", channel="analysis")


# --- MCP ---------------------------------------------------------------------------------------


MCP_INTERNAL_ERROR = -32603  # JSON-RPC's code for an error that is not the tool's own


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
        from tools_app.mcp.client import McpError, call_tool
        from tools_app.mcp.servers import server_for_tool

        refusal = self.toolbox.take_call()
        if refusal is not None:
            return self._failed(refusal, tool_error=True)
        self.toolbox.flush()
        tool = self.toolbox.mcp_servers[self.label]
        try:
            arguments = _json_object(self.arguments)
            output = self.toolbox.wait(lambda: call_tool(server_for_tool(self.toolbox.response.tenant_id, tool),
                                                         self.name, arguments,
                                                         timeout_s=settings.TOOL_CALL_TIMEOUT_S))
        except McpError as error:
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


class McpApprovalRequest:
    """A call that needs the client's approval: the response ends with an
    ``mcp_approval_request``; an ``mcp_approval_response`` in the next request runs or skips it."""

    def __init__(self, toolbox: Toolbox, label: str, name: str) -> None:
        self.builder = toolbox.builder
        self.label = label
        self.name = name
        self.arguments = ""

    def delta(self, text: str) -> None:
        """The request is shown whole, once the model has written its arguments."""

    def finished(self, text: str) -> None:
        self.arguments = text

    def execute(self) -> None:
        self.builder.add_item({"id": new_id("mcpr"), "type": "mcp_approval_request", "server_label": self.label,
                               "name": self.name, "arguments": self.arguments})
        self.builder.finish_item(None)


def _json_object(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except json.JSONDecodeError as error:
        raise ValueError(f"The tool arguments are not valid JSON: {error}") from error
    if not isinstance(value, dict):
        raise ValueError("The tool arguments must be a JSON object.")
    return value
