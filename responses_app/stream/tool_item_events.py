"""The events of the tool loop's items (code interpreter, MCP, web search, file search, the
client's calls): opened, changed, told about and finished by the worker's tools. A part of the
event builder (stream/builder.py), which holds the items and emits the events."""

from __future__ import annotations

from typing import Any

from openai import BaseModel
from openai.types import responses as types

from responses_app.stream.builder_state import BuilderState
from responses_app.wire.objects import public_item


class ToolItemEvents(BuilderState):
    def add_item(self, item: dict[str, Any]) -> None:
        """Open ``item`` as the next output item (``response.output_item.added``)."""
        self.close_open_item()
        self.output.append(item)
        index = self._open_index = len(self.output) - 1
        self._dirty_items.add(index)
        self._emit(types.ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index,
                   item=public_item(item, self._include))

    def update_item(self, **fields: Any) -> None:
        """Change fields of the open item (persisted with the next batch)."""
        item, index = self._open_pair()
        if item is None or index is None:
            raise ValueError("no open item to update")
        item.update(fields)
        self._dirty_items.add(index)

    def item_event(self, event_class: type[BaseModel], event_type: str, **fields: Any) -> None:
        """An event about the open item; its item_id and output_index are filled in."""
        item, index = self._open_pair()
        if item is None or index is None:
            raise ValueError(f"{event_type} without an open item")
        self._emit(event_class, type=event_type, item_id=item["id"], output_index=index, **fields)

    def output_event(self, event_class: type[BaseModel], event_type: str, **fields: Any) -> None:
        """An event about the open item that names it by output_index only (shell_call_command.*)."""
        if self._open_index is None:
            raise ValueError(f"{event_type} without an open item")
        self._emit(event_class, type=event_type, output_index=self._open_index, **fields)

    def finish_item(self, status: str | None) -> None:
        """Close the open item with ``status`` (None: an item type without one) and emit
        ``response.output_item.done``."""
        item, index = self._open_pair()
        if item is None or index is None:
            raise ValueError("no open item to finish")
        if status is not None:
            item["status"] = status
        self._dirty_items.add(index)
        self._emit(types.ResponseOutputItemDoneEvent, type="response.output_item.done", output_index=index,
                   item=public_item(item, self._include))
        self._open_index = None
