"""One response's server-side tools: which ones the request gives, the calls made so far
(max_tool_calls), the call item a lost worker left open, and the state the calls share
(the code interpreter's container, the browser, the answer's annotators).

Each call the model makes becomes one persisted, streamed item (added -> in_progress ->
argument/code deltas -> the tool runs -> completed or failed -> output_item.done with the
real result); registry.py makes the call of a harmony recipient, and the generation loop
feeds its ``ToolResult`` back to the model as the tool's harmony message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openai import BaseModel

from responses_app.harmony import file_search
from responses_app.harmony.file_search import file_citations
from responses_app.harmony.messages import BROWSER_NAMESPACE, PYTHON_RECIPIENT
from responses_app.models import Response
from responses_app.stream.builder import EventBuilder
from responses_app.wire.search_options import FileSearchTool
from responses_app.wire.tool_types import CodeInterpreterTool, McpTool, WebSearchTool
from responses_app.worker.tools import tools_app_adapter
from responses_app.worker.tools.base import SERVER_CALL_TYPES, Waiter


class Toolbox:
    def __init__(self, response: Response, builder: EventBuilder, history: list[dict[str, Any]],
                 flush: Callable[[], None], wait: Waiter) -> None:
        self.response = response
        self.builder = builder
        self.history = history
        self.flush = flush  # commit pending events, so clients see a tool start before it runs
        self.wait = wait
        request = response.params
        tools = () if request.tool_choice.mode == "none" else request.tools
        self.code_interpreter = next((tool for tool in tools if isinstance(tool, CodeInterpreterTool)), None)
        self.web_search = next((tool for tool in tools if isinstance(tool, WebSearchTool)), None)
        self.file_search = next((tool for tool in tools if isinstance(tool, FileSearchTool)), None)
        self.mcp_servers = {tool.server_label: tool for tool in tools if isinstance(tool, McpTool)}
        self.max_tool_calls = request.max_tool_calls
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

    def route(self, recipient: str) -> str | None:
        """The tool of the response that ``recipient`` names (python, browser, file_search,
        mcp), or None."""
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

    def read_only(self, label: str, name: str) -> bool:
        """Whether the MCP server's listing marks the tool read-only (readOnlyHint)."""
        for item in reversed(self.history + self.builder.output):
            if item.get("type") == "mcp_list_tools" and item.get("server_label") == label:
                tool: dict[str, Any] = next((tool for tool in item.get("tools") or [] if tool.get("name") == name), {})
                return bool((tool.get("annotations") or {}).get("readOnlyHint"))
        return False

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
        conversation used last, or a new one. Raises ToolError."""
        if self._container is None:
            earlier = [item.get("container_id") for item in self.history + self.builder.output
                       if item.get("type") == "code_interpreter_call"]
            tool = self.code_interpreter
            assert tool is not None  # its calls are routed only when the tool is given
            reuse_id = earlier[-1] if earlier else None
            self._container = tools_app_adapter.resolve_container(self.response.tenant_id, tool.container_id, reuse_id)
            if tool.file_ids and self._container.pk != reuse_id:
                tools_app_adapter.seed_container(self.response.tenant, self._container.pk, list(tool.file_ids))
        return self._container

    def browser(self) -> Any:
        if self._browser is None:
            access = self.web_search.external_web_access if self.web_search is not None else None
            external = True if access is None else access
            self._browser, citations = tools_app_adapter.browser_session(self.response.tenant_id, external)
            self.add_annotator(citations)
        return self._browser

    def add_annotator(self, annotator: Callable[[str], list[dict[str, Any]]]) -> None:
        """Annotate the answer's text with ``annotator``'s citations too."""
        earlier = self.builder.annotator
        self.builder.annotator = annotator if earlier is None else lambda text: earlier(text) + annotator(text)
