"""The events of a reasoning item's summary (reasoning.summary): the worker has the model write
it once the item's text is done (worker/side_calls.py), and the item stays open until then.
A part of the event builder (stream/builder.py), which holds the item and emits the events."""

from __future__ import annotations

from typing import Any

from openai.types import responses as types

from responses_app.stream.builder_state import BuilderState


class SummaryEvents(BuilderState):
    """What EventBuilder adds for summaries."""

    @property
    def summary_written(self) -> str:
        """The summary of the reasoning item that waits for it, as far as it is written
        (a lost worker may have begun it)."""
        if not self._summarizing or self._open_index is None:
            return ""
        summary = self.output[self._open_index]["summary"]
        return summary[0]["text"] if summary else ""

    def summary_delta(self, text: str) -> None:
        item, index = self._waiting_item()
        common = {"item_id": item["id"], "output_index": index, "summary_index": 0}
        if not item["summary"]:
            item["summary"].append({"type": "summary_text", "text": ""})
            self._dirty_items.add(index)
            self._emit(types.ResponseReasoningSummaryPartAddedEvent, type="response.reasoning_summary_part.added",
                       part={"type": "summary_text", "text": ""}, **common)
        item["summary"][0]["text"] += text
        self._grown_items.add(index)
        self._emit(types.ResponseReasoningSummaryTextDeltaEvent, type="response.reasoning_summary_text.delta",
                   delta=text, **common)

    def finish_summary(self, status: str = "completed") -> None:
        """The summary is written (or cut off): its done events, then the item's."""
        item, index = self._waiting_item()
        self._summarizing = False
        if item["summary"]:
            common = {"item_id": item["id"], "output_index": index, "summary_index": 0}
            part = item["summary"][0]
            self._emit(types.ResponseReasoningSummaryTextDoneEvent, type="response.reasoning_summary_text.done",
                       text=part["text"], **common)
            self._emit(types.ResponseReasoningSummaryPartDoneEvent, type="response.reasoning_summary_part.done",
                       part=part, **common)
        self._end_item(item, index, status)

    def _waiting_item(self) -> tuple[dict[str, Any], int]:
        if self._open_index is None:
            raise ValueError("no reasoning item waits for its summary")
        return self.output[self._open_index], self._open_index
