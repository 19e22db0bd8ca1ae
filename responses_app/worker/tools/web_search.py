"""The web_search tool: the model's harmony ``browser`` calls (search, open, find), run
by the response's browser (tools_app's), as ``web_search_call`` items."""

from __future__ import annotations

from openai.types import responses as types

from responses_app.harmony.messages import BROWSER_NAMESPACE
from responses_app.lib.ids import new_id
from responses_app.worker.tools import tools_app_adapter
from responses_app.worker.tools.base import ToolResult, WholeCall, json_object
from responses_app.worker.tools.toolbox import Toolbox
from responses_app.worker.tools.tools_app_adapter import ToolError


class WebSearchCall(WholeCall):
    """Browser arguments are not streamed to the client (the API has no such event)."""

    def __init__(self, toolbox: Toolbox, function: str) -> None:
        self.toolbox = toolbox
        self.builder = toolbox.builder
        self.function = function
        # As OpenAI does, the action is known (and shown) once the search ran.
        _, self.committed = toolbox.start_item({"id": new_id("ws"), "type": "web_search_call",
                                                "status": "in_progress", "action": {"type": "search"}},
                                               types.ResponseWebSearchCallInProgressEvent,
                                               "response.web_search_call.in_progress")

    def execute(self) -> ToolResult:
        author = f"{BROWSER_NAMESPACE}.{self.function}"
        refusal = self.toolbox.take_call()
        if refusal is not None:
            return self._failed(author, refusal)
        if "response.web_search_call.searching" not in self.committed:  # a lost worker's search is run again
            self.builder.item_event(types.ResponseWebSearchCallSearchingEvent, "response.web_search_call.searching")
        self.toolbox.flush()
        try:
            arguments = json_object(self.arguments)
            browser = self.toolbox.browser()
            result = self.toolbox.wait(lambda: tools_app_adapter.browse(browser, self.function, arguments))
        except (ToolError, ValueError) as error:
            return self._failed(author, str(error))
        self.builder.update_item(action=result.action)
        self.builder.item_event(types.ResponseWebSearchCallCompletedEvent, "response.web_search_call.completed")
        self.builder.finish_item("completed")
        return ToolResult(author=author, text=result.text, channel="analysis")

    def _failed(self, author: str, message: str) -> ToolResult:
        self.builder.finish_item("failed")
        return ToolResult(author=author, text=f"Error: {message}", channel="analysis")
