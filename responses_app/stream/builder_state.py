"""What the parts of the event builder share: its output items, the open one, the items to
write, and how it emits an event (stream/builder.py holds them; summary_events.py and
tool_item_events.py use them)."""

from __future__ import annotations

from typing import Any

from openai import BaseModel


class BuilderState:
    output: list[dict[str, Any]]
    _open_index: int | None
    _summarizing: bool
    _include: list[str]
    _dirty_items: set[int]
    _grown_items: set[int]

    def _emit(self, event_class: type[BaseModel], **fields: Any) -> None:
        raise NotImplementedError

    def _end_item(self, item: dict[str, Any], index: int, status: str) -> None:
        raise NotImplementedError

    def close_open_item(self, failed: bool = False) -> None:
        raise NotImplementedError

    def _open_pair(self) -> tuple[dict[str, Any] | None, int | None]:
        """The open item and its output_index (None, None: none is open)."""
        index = self._open_index
        return (self.output[index] if index is not None else None), index
