"""The file_search tool (harmony/file_search.py): the model's searches of the request's
vector stores, as ``file_search_call`` items."""

from __future__ import annotations

from openai.types import responses as types

from responses_app.harmony import file_search
from responses_app.lib.ids import new_id
from responses_app.vector_stores.store import file_search_results
from responses_app.worker.tools.base import ToolResult, WholeCall
from responses_app.worker.tools.toolbox import Toolbox


class FileSearchCall(WholeCall):
    """The queries are shown once whole (the API has no event for their deltas)."""

    def __init__(self, toolbox: Toolbox) -> None:
        self.toolbox = toolbox
        self.builder = toolbox.builder
        _, self.committed = toolbox.start_item({"id": new_id("fs"), "type": "file_search_call",
                                                "status": "in_progress", "queries": [], "results": None},
                                               types.ResponseFileSearchCallInProgressEvent,
                                               "response.file_search_call.in_progress")

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
