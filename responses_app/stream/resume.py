"""Where a response's committed stream stands: what a writer taking it over (a worker
continuing it after its own was lost, the reaper ending it) starts from.

Items and the events that made them are committed together (EventBuilder.drain), but for
the text that an open item grew by since its row was last written, which output_items takes
from the committed deltas (selectors.with_open_item_as_streamed): so the output says exactly what clients
have seen. Items are finished in order, each with its
``response.output_item.done``; at most the last one is open: the one whose done event
was never committed (a status alone cannot tell, since some item types have none).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from responses_app.models import Response, ResponseEvent
from responses_app.selectors import output_items

ITEM_DONE = "response.output_item.done"


@dataclass(frozen=True)
class ResumePoint:
    output: list[dict[str, Any]]
    open_index: int | None = None
    # The types of the events committed since the open item was added: how far it got
    # (its code written, its tool started, its text done and its summary under way).
    open_item_events: frozenset[str] = field(default_factory=frozenset)

    @property
    def open_item(self) -> dict[str, Any] | None:
        return self.output[self.open_index] if self.open_index is not None else None

    @property
    def closed_output(self) -> list[dict[str, Any]]:
        return self.output if self.open_index is None else self.output[: self.open_index]

    @property
    def summarizing(self) -> bool:
        """The open item is a reasoning item whose text is done, waiting for its summary."""
        item = self.open_item
        return (item is not None and item["type"] == "reasoning"
                and "response.reasoning_text.done" in self.open_item_events)


def resume_point(response: Response) -> ResumePoint:
    output = output_items(response)
    events = ResponseEvent.objects.filter(response_id=response.pk)
    if not output or events.filter(type=ITEM_DONE).count() >= len(output):
        return ResumePoint(output)
    added = (events.filter(type="response.output_item.added").order_by("-sequence_number")
             .values_list("sequence_number", flat=True).first())
    since = events.filter(sequence_number__gt=added if added is not None else -1)
    return ResumePoint(output, open_index=len(output) - 1,
                       open_item_events=frozenset(since.values_list("type", flat=True).distinct()))
