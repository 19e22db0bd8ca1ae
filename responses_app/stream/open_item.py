"""A running response's open item as its committed events give it.

The builder writes an item that only grows by text deltas at most every
ITEM_ROW_INTERVAL_S (stream/builder.py), while its deltas are committed with every batch,
so the row of a response's open item may lag its stream by up to that long. Whoever reads
a running response's output (a mid-stream GET, a continuation after a lost worker, the
reaper's end) takes the open item's growing text from its committed deltas instead, so
that it is never staler than the stream: an item's text is the concatenation of its
deltas, from its ``response.output_item.added`` on.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from responses_app.models import ResponseEvent

ITEM_ADDED = "response.output_item.added"
ITEM_DONE = "response.output_item.done"
# The delta events whose text an item's row may not have yet: where each one's text goes.
CONTENT_DELTAS = frozenset({"response.output_text.delta", "response.reasoning_text.delta"})
SUMMARY_DELTA = "response.reasoning_summary_text.delta"
CALL_DELTAS = {"response.function_call_arguments.delta": "arguments",
               "response.custom_tool_call_input.delta": "input"}
GROWING = CONTENT_DELTAS | {SUMMARY_DELTA} | set(CALL_DELTAS)


def with_open_item_as_streamed(response_id: str, output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``output`` (a running response's item rows, by output_index) with its last item's
    growing text rebuilt from the committed deltas, unless that item is done (its row was
    then written with its done event)."""
    if not output:
        return output
    events = ResponseEvent.objects.filter(response_id=response_id)
    added = (events.filter(type=ITEM_ADDED).order_by("-sequence_number")
             .values_list("sequence_number", "data").first())
    if added is None or json.loads(added[1])["item"]["id"] != output[-1]["id"]:
        return output
    since = (events.filter(sequence_number__gt=added[0], type__in=[*GROWING, ITEM_DONE])
             .order_by("sequence_number").values_list("type", "data"))
    texts: dict[tuple[str, Any], list[str]] = {}
    for event_type, data in since:
        if event_type == ITEM_DONE:
            return output
        event = json.loads(data)
        if event_type in CONTENT_DELTAS:
            place: tuple[str, Any] = ("content", event["content_index"])
        elif event_type == SUMMARY_DELTA:
            place = ("summary", event["summary_index"])
        else:
            place = (CALL_DELTAS[event_type], None)
        texts.setdefault(place, []).append(event["delta"])
    if not texts:
        return output
    item = copy.deepcopy(output[-1])
    for (field, index), deltas in texts.items():
        if index is None:
            item[field] = "".join(deltas)
        elif index < len(item[field]):
            item[field][index]["text"] = "".join(deltas)
    return [*output[:-1], item]
