"""The model's call of the request's ``tool_search`` tool (harmony/tool_search.py), read
whole, then put out as the SDK types it: a ``tool_search_call`` item. Run by the client,
the response ends there, as after a function call; run by the server, the worker searches
the request's deferred tools, writes the ``tool_search_output`` item with what it loaded,
and the model goes on with those tools declared."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from responses_app.harmony import tool_search
from responses_app.harmony.client_tools import UnreadableCall, json_arguments
from responses_app.harmony.messages import FUNCTIONS_NAMESPACE, SEARCH_TOOL
from responses_app.lib.ids import new_id
from responses_app.stream.builder import EventBuilder
from responses_app.wire.tool_types import Tool, ToolSearchTool
from responses_app.worker.tools.base import ToolResult, WholeCall

AUTHOR = f"{FUNCTIONS_NAMESPACE}.{SEARCH_TOOL}"


class ToolSearchCall(WholeCall):
    """Nothing streams: the item is put out once its arguments are whole."""

    def __init__(self, builder: EventBuilder, tool: ToolSearchTool, tools: Sequence[Tool]) -> None:
        self.builder = builder
        self.execution = tool.execution
        self.tools = tools

    def execute(self) -> ToolResult | None:
        try:
            arguments = json_arguments(self.arguments)
        except UnreadableCall as error:
            return ToolResult(author=AUTHOR, channel="commentary",
                              text=f"Error: the search could not be read: {error}. "
                                   "Call tool_search again with arguments that match its parameters.")
        # A client's search is answered by call_id; a server's has none (as OpenAI's hosted
        # search: the AI SDK tells the two apart by it).
        call_id = new_id("call") if self.execution == "client" else None
        self._put_out({"id": new_id("ts"), "type": "tool_search_call", "call_id": call_id,
                       "execution": self.execution, "arguments": arguments, "status": "completed"})
        if self.execution == "client":
            return None  # the client searches, and answers with a tool_search_output item
        query = arguments.get("query")
        queries = query if isinstance(query, list) else [query]
        found = tool_search.search(" ".join(str(entry) for entry in queries if entry),
                                   tool_search.deferred_tools(self.tools), tool_search.limit_of(arguments))
        self._put_out({"id": new_id("tso"), "type": "tool_search_output", "call_id": call_id,
                       "execution": "server", "tools": [tool.to_stored() for tool in found], "status": "completed"})
        return ToolResult(author=AUTHOR, channel="commentary", text=tool_search.output_text(found),
                          loaded=tuple(found))

    def _put_out(self, item: dict[str, Any]) -> None:
        self.builder.add_item(item)
        self.builder.finish_item(None)
