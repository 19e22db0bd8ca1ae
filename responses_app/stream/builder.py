"""The event builder: the single place that assigns item ids, output_index, content_index
and sequence numbers.

It turns the harmony bridge's semantic progress (a message started, text arrived, a
message finished) into Responses stream events, built with the SDK's own types, and
keeps the output items that the final Response object carries. It does no I/O: the
event store persists what it produced (``drain``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from openai import BaseModel
from openai.types import responses as types

from responses_app.harmony.encoding import token_bytes
from responses_app.harmony.parser import ContentDelta, MessageFinished, MessageStarted
from responses_app.lib.ids import new_id
from responses_app.models import TERMINAL_EVENTS, Response
from responses_app.response_object import response_object
from responses_app.stream.resume import ResumePoint
from responses_app.stream.summary_events import SummaryEvents
from responses_app.stream.tool_item_events import ToolItemEvents
from responses_app.wire import encrypted_reasoning

LIFECYCLE_EVENT_CLASSES: dict[str, type[BaseModel]] = {
    "response.created": types.ResponseCreatedEvent,
    "response.in_progress": types.ResponseInProgressEvent,
    "response.completed": types.ResponseCompletedEvent,
    "response.failed": types.ResponseFailedEvent,
    "response.incomplete": types.ResponseIncompleteEvent,
}
ITEM_ID_PREFIX = {"reasoning": "rs", "message": "msg", "function_call": "fc", "custom_tool_call": "ctc"}
DELTA_EVENT = {"reasoning": "response.reasoning_text.delta", "message": "response.output_text.delta",
               "function_call": "response.function_call_arguments.delta",
               "custom_tool_call": "response.custom_tool_call_input.delta"}
# Where a call item keeps the text the model writes.
CALL_TEXT = {"function_call": "arguments", "custom_tool_call": "input"}
# Items whose text streams from the model's message; the tool loop's items (code
# interpreter, MCP, web search) are opened and closed through the generic methods below.
MESSAGE_ITEM_TYPES = frozenset({"reasoning", "message", "function_call", "custom_tool_call"})
# The server's tool calls whose status may be ``failed`` (the SDK's types).
FAILABLE_CALL_TYPES = frozenset({"file_search_call", "web_search_call", "code_interpreter_call", "mcp_call"})
# Finds url_citation annotations in a final answer's text (set by the tool loop for web search).
Annotator = Callable[[str], list[dict[str, Any]]]


# The longest an open item's row lags behind its committed text deltas (see drain).
ITEM_ROW_INTERVAL_S = 1.0


def _snapshot(value: Any) -> Any:
    """A copy of an item's dicts and lists (its strings and numbers are immutable). A
    part's logprobs only grow, each entry unchanged once added: their list is copied, not
    its entries (2.7 ms for 2,000 entries copied whole, each flush)."""
    if isinstance(value, dict):
        return {key: list(entry) if key == "logprobs" else _snapshot(entry) for key, entry in value.items()}
    if isinstance(value, list):
        return [_snapshot(entry) for entry in value]
    return value


def build_event(event_class: type[BaseModel], **fields: Any) -> dict[str, Any]:
    """An event validated against the SDK's type and dumped as it goes on the wire."""
    return event_class.model_validate(fields).model_dump(mode="json", exclude_unset=True, by_alias=True)


def _part_logprob(entry: list[tuple[int, float]]) -> dict[str, Any]:
    """A token's logprob as an output_text part holds it (the SDK's Logprob, with bytes)."""
    (token_id, logprob), alternatives = entry[0], entry[1:]

    def token(token_id: int, logprob: float) -> dict[str, Any]:
        raw = token_bytes(token_id)
        return {"token": raw.decode("utf-8", "replace"), "bytes": list(raw), "logprob": logprob}

    return {**token(token_id, logprob), "top_logprobs": [token(other, value) for other, value in alternatives]}


def _event_logprob(part: dict[str, Any]) -> dict[str, Any]:
    """The same, as the delta and done events type it (no bytes)."""
    return {"token": part["token"], "logprob": part["logprob"],
            "top_logprobs": [{"token": top["token"], "logprob": top["logprob"]} for top in part["top_logprobs"]]}


def delta_event(event_type: str, sequence_number: int, item_id: str, output_index: int, delta: str,
                logprobs: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A text, reasoning or arguments delta, exactly as build_event dumps it (the same keys
    in the same order; tests/stream/test_builder.py holds the two together), built without
    the SDK's validation: one event per token is most of what the builder makes, and its
    fields are the builder's own strings and integers."""
    if event_type in ("response.function_call_arguments.delta", "response.custom_tool_call_input.delta"):
        return {"delta": delta, "item_id": item_id, "output_index": output_index, "sequence_number": sequence_number,
                "type": event_type}
    event = {"content_index": 0, "delta": delta, "item_id": item_id}
    if event_type == "response.output_text.delta":
        event["logprobs"] = logprobs or []
    event.update(output_index=output_index, sequence_number=sequence_number, type=event_type)
    return event


class EventBuilder(ToolItemEvents, SummaryEvents):
    def __init__(self, response: Response, next_sequence_number: int, resumed: ResumePoint | None = None):
        """``resumed``: where an earlier writer's stream (a lost worker's) stopped
        (stream/resume.py): its items go on, and an item it left open stays open."""
        self.response = response
        self.next_sequence_number = next_sequence_number
        self.output: list[dict[str, Any]] = list(resumed.output) if resumed is not None else []
        self._open_index: int | None = resumed.open_index if resumed is not None else None
        self._pending_events: list[dict[str, Any]] = []
        self._dirty_items: set[int] = set()
        # Items changed only by text deltas since their row was last written, and when that
        # was: see drain.
        self._grown_items: set[int] = set()
        self._item_written_at: dict[int, float] = {}
        params = response.params
        self._include = params.include
        # reasoning.summary: each reasoning item stays open after its text for the summary
        # the worker has the model write (worker/side_calls.py); True while one waits.
        self.summarizes = bool(params.reasoning.summary)
        self._summarizing = resumed is not None and resumed.summarizing
        self.annotator: Annotator | None = None
        self._merges_deltas = settings.MERGE_STREAM_DELTAS

    # --- lifecycle ---------------------------------------------------------------------

    def lifecycle(self, event_type: str, status: str) -> None:
        """response.created / in_progress / completed / failed / incomplete with a snapshot."""
        response = response_object(self.response, self.output, status=status)
        self._emit(LIFECYCLE_EVENT_CLASSES[event_type], type=event_type, response=response)
        # As GET sends it: the SDK's event type would turn the integral timestamps into floats.
        self._pending_events[-1]["response"] = response

    def terminal(self, status: str) -> None:
        """The one event that ends the stream, for a terminal ``status``."""
        self.lifecycle(TERMINAL_EVENTS[status], status=status)

    # --- harmony progress ----------------------------------------------------------------

    def apply(self, progress: MessageStarted | ContentDelta | MessageFinished,
              logprobs: list[list[tuple[int, float]]] | None = None) -> None:
        """``logprobs``: of the tokens of a ContentDelta (include message.output_text.logprobs),
        as EngineChunk.logprobs gives them; kept for an answer's text only."""
        if isinstance(progress, MessageStarted):
            self._start_item(progress)
        elif isinstance(progress, ContentDelta):
            self._delta(progress.text, logprobs)
        else:
            self._finish_item(progress.text, "completed")

    @property
    def open_item(self) -> dict[str, Any] | None:
        return self.output[self._open_index] if self._open_index is not None else None

    def close_open_item(self, failed: bool = False) -> None:
        """End an item cut off by a limit, a cancel or a failure as ``incomplete``; when
        the response ``failed``, a tool call whose type has a ``failed`` status ends so (its
        call was never made, and the response's error says why)."""
        item = self.open_item
        if item is None:
            return
        if self._summarizing:
            self.finish_summary("incomplete")
        elif item["type"] in MESSAGE_ITEM_TYPES:
            self._finish_item(self._item_text(item), "incomplete")
        else:
            self.finish_item("failed" if failed and item["type"] in FAILABLE_CALL_TYPES else "incomplete")

    def finish_open_message(self) -> None:
        """End the open message, completed, where its text stands (a stop sequence ended
        the output: worker/stop_sequences.py)."""
        item = self.open_item
        if item is not None and item["type"] == "message":
            self._finish_item(self._item_text(item), "completed")

    @property
    def has_pending_events(self) -> bool:
        return bool(self._pending_events)

    def drain(self, every_item: bool = False) -> tuple[list[dict[str, Any]], list[tuple[int, dict[str, Any]]]]:
        """Events produced since the last drain, and the output items they changed, as they
        stand at these events: the items are copied, since the builder goes on changing
        them while the batch waits for its commit (on the committer thread), and a row
        written ahead of its batch's events would hold text that no committed event gave
        (which a reaper, or a continuation, would then take for what the client saw).

        An item that only grew by text deltas is written at most every ITEM_ROW_INTERVAL_S
        (unless ``every_item``): rewriting a growing item's row with every batch was a third
        of a group commit. Its deltas are committed with each batch, and whoever reads an
        open item folds them into its row (selectors.with_open_item_as_streamed); an item's other changes
        (added, a part, done) are written at once."""
        events, self._pending_events = self._pending_events, []
        now = time.monotonic()
        due = self._dirty_items | {index for index in self._grown_items
                                   if every_item or now - self._item_written_at.get(index, 0.0) >= ITEM_ROW_INTERVAL_S}
        items = [(index, _snapshot(self.output[index])) for index in sorted(due)]
        self._dirty_items = set()
        self._grown_items -= due
        for index in due:
            self._item_written_at[index] = now
        return events, items

    # --- internals ---------------------------------------------------------------------------

    def _emit(self, event_class: type[BaseModel], **fields: Any) -> None:
        event = build_event(event_class, sequence_number=self.next_sequence_number, **fields)
        self.next_sequence_number += 1
        self._pending_events.append(event)

    def _start_item(self, started: MessageStarted) -> None:
        if started.kind not in ITEM_ID_PREFIX:
            raise ValueError(f"no output item for harmony message kind {started.kind!r}")
        self.close_open_item()
        item_id = new_id(ITEM_ID_PREFIX[started.kind])
        item: dict[str, Any]
        if started.kind == "reasoning":
            item = {"id": item_id, "type": "reasoning", "summary": [], "content": [], "status": "in_progress"}
        elif started.kind == "message":
            # phase: the SDK's label of the channel, which the prompt of a later turn (and a
            # continuation of this one) writes the message on again.
            item = {"id": item_id, "type": "message", "role": "assistant", "content": [],
                    "phase": "commentary" if started.channel == "commentary" else "final_answer",
                    "status": "in_progress"}
        elif started.kind == "custom_tool_call":
            item = {"id": item_id, "type": "custom_tool_call", "call_id": new_id("call"), "name": started.name,
                    "input": ""}
        else:
            item = {"id": item_id, "type": "function_call", "call_id": new_id("call"), "name": started.name,
                    **({"namespace": started.namespace} if started.namespace else {}),
                    "arguments": "", "status": "in_progress"}
        self.output.append(item)
        index = self._open_index = len(self.output) - 1
        self._dirty_items.add(index)
        self._emit(types.ResponseOutputItemAddedEvent, type="response.output_item.added", output_index=index,
                   item=item)
        if started.kind in ("reasoning", "message"):
            part = self._empty_part(item)
            item["content"].append(part)
            self._emit(types.ResponseContentPartAddedEvent, type="response.content_part.added", item_id=item_id,
                       output_index=index, content_index=0, part=part)

    def _delta(self, text: str, logprobs: list[list[tuple[int, float]]] | None = None) -> None:
        item, index = self.open_item, self._open_index
        if item is None or index is None:
            raise ValueError("content arrived outside of a message")
        # Logprobs' bytes are in the part only, not in the events: such an item is written
        # with every batch.
        (self._dirty_items if logprobs is not None else self._grown_items).add(index)
        event_logprobs = None
        if item["type"] in CALL_TEXT:
            item[CALL_TEXT[item["type"]]] += text
        else:
            item["content"][0]["text"] += text
            if logprobs is not None and item["type"] == "message":
                part_logprobs = [_part_logprob(entry) for entry in logprobs]
                item["content"][0]["logprobs"].extend(part_logprobs)
                event_logprobs = [_event_logprob(entry) for entry in part_logprobs]
        pending = self._pending_events[-1] if self._pending_events and self._merges_deltas else None
        if pending is not None and pending["type"] == DELTA_EVENT[item["type"]] and pending["item_id"] == item["id"]:
            # The same item's delta is still to be committed: this text joins it (one event
            # per commit and item rather than per token; its logprobs are its tokens').
            pending["delta"] += text
            if event_logprobs:
                pending["logprobs"].extend(event_logprobs)
            return
        self._pending_events.append(delta_event(DELTA_EVENT[item["type"]], self.next_sequence_number, item["id"],
                                                index, text, event_logprobs))
        self.next_sequence_number += 1

    def _finish_item(self, text: str, status: str) -> None:
        item, index = self.open_item, self._open_index
        if item is None or index is None:
            raise ValueError("a message finished that never started")
        common = {"item_id": item["id"], "output_index": index}
        if item["type"] == "function_call":
            item["arguments"] = text
            self._emit(types.ResponseFunctionCallArgumentsDoneEvent, type="response.function_call_arguments.done",
                       arguments=text, **common)
        elif item["type"] == "custom_tool_call":
            item["input"] = text
            self._emit(types.ResponseCustomToolCallInputDoneEvent, type="response.custom_tool_call_input.done",
                       input=text, **common)
        else:
            part = item["content"][0]
            part["text"] = text
            if item["type"] == "reasoning":
                self._emit(types.ResponseReasoningTextDoneEvent, type="response.reasoning_text.done",
                           content_index=0, text=text, **common)
                if encrypted_reasoning.INCLUDE in self._include:
                    item["encrypted_content"] = encrypted_reasoning.encrypted_content(self.response.tenant_id,
                                                                                      item["content"])
            else:
                self._annotate(part, common)
                self._emit(types.ResponseTextDoneEvent, type="response.output_text.done", content_index=0, text=text,
                           logprobs=[_event_logprob(entry) for entry in part.get("logprobs") or []], **common)
            self._emit(types.ResponseContentPartDoneEvent, type="response.content_part.done", content_index=0,
                       part=part, **common)
            if item["type"] == "reasoning" and self.summarizes and status == "completed":
                self._summarizing = True
                self._dirty_items.add(index)
                return
        self._end_item(item, index, status)

    def _end_item(self, item: dict[str, Any], index: int, status: str) -> None:
        if item["type"] != "custom_tool_call":  # the only one the SDK types without a status
            item["status"] = status
        self._dirty_items.add(index)
        self._emit(types.ResponseOutputItemDoneEvent, type="response.output_item.done", output_index=index, item=item)
        self._open_index = None

    # --- reasoning summaries (the rest: stream/summary_events.py) -----------------------------

    @property
    def summary_due(self) -> str | None:
        """The text of the reasoning item that waits for its summary, if one does."""
        return self._item_text(self.open_item) if self._summarizing and self.open_item else None

    def _annotate(self, part: dict[str, Any], common: dict[str, Any]) -> None:
        # Citations are known only once the whole answer is: they come just before its done event.
        if self.annotator is None:
            return
        for annotation in self.annotator(part["text"]):
            part["annotations"].append(annotation)
            self._emit(types.ResponseOutputTextAnnotationAddedEvent, type="response.output_text.annotation.added",
                       content_index=0, annotation_index=len(part["annotations"]) - 1, annotation=annotation,
                       **common)

    @staticmethod
    def _empty_part(item: dict[str, Any]) -> dict[str, Any]:
        if item["type"] == "reasoning":
            return {"type": "reasoning_text", "text": ""}
        return {"type": "output_text", "text": "", "annotations": [], "logprobs": []}

    @staticmethod
    def _item_text(item: dict[str, Any]) -> str:
        if item["type"] in CALL_TEXT:
            return item[CALL_TEXT[item["type"]]]
        return item["content"][0]["text"] if item["content"] else ""
