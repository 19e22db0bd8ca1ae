"""Reads, always scoped to the caller's tenant: another tenant's ids are simply not found."""

from __future__ import annotations

import copy
import json
from typing import Any

from django.db import connection
from django.db.models import QuerySet

from responses_app.models import (
    TERMINAL_STATUSES,
    ConversationItem,
    InputItem,
    OutputItem,
    Response,
    ResponseEvent,
    Tenant,
)
from responses_app.response_object import response_object
from responses_app.tenancy.retention import unexpired
from responses_app.wire.errors import InvalidRequest, or_not_found
from responses_app.wire.objects import item_object, list_object


def get_response(tenant: Tenant, response_id: str) -> Response:
    """A stored, unexpired response of this tenant (store=false responses are never retrievable)."""
    return or_not_found(unexpired(Response.objects.filter(tenant=tenant, pk=response_id, store=True), tenant).first(),
                        f"Response with id '{response_id}' not found.", "response_id")


def input_items(response: Response) -> list[dict[str, Any]]:
    """A response's input items, in order."""
    return list(InputItem.objects.filter(response=response).order_by("position").values_list("data", flat=True))


def conversation_items(conversation_id: str) -> list[dict[str, Any]]:
    """The items of a conversation, in order: the history of a response working on it."""
    return list(ConversationItem.objects.filter(conversation_id=conversation_id).order_by("position")
                .values_list("data", flat=True))


def output_items(response: Response) -> list[dict[str, Any]]:
    """A response's output items, by output_index; a running response's open item as far
    as its committed events go (its row may lag them: with_open_item_as_streamed)."""
    output = list(OutputItem.objects.filter(response=response).order_by("output_index").values_list("data", flat=True))
    if response.status in TERMINAL_STATUSES:
        return output
    return with_open_item_as_streamed(response.pk, output)


# --- a running response's open item, as its committed events give it --------------------
# The builder writes an item that only grows by text deltas at most every
# ITEM_ROW_INTERVAL_S (stream/builder.py), while its deltas are committed with every batch,
# so the row of a response's open item may lag its stream by up to that long. Whoever reads
# a running response's output (a mid-stream GET, a continuation after a lost worker, the
# reaper's end) takes the open item's growing text from its committed deltas instead, so
# that it is never staler than the stream: an item's text is the concatenation of its
# deltas, from its ``response.output_item.added`` on.
ITEM_ADDED = "response.output_item.added"
# The delta events whose text an item's row may not have yet: where each one's text goes.
CONTENT_DELTAS = frozenset({"response.output_text.delta", "response.reasoning_text.delta"})
SUMMARY_DELTA = "response.reasoning_summary_text.delta"
CALL_DELTAS = {"response.function_call_arguments.delta": "arguments",
               "response.custom_tool_call_input.delta": "input"}
GROWING = CONTENT_DELTAS | {SUMMARY_DELTA} | set(CALL_DELTAS)


def with_open_item_as_streamed(response_id: str, output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``output`` (a running response's item rows, by output_index) with its last item's
    growing text rebuilt from the committed deltas where they carry more of it than its row
    (a row is never ahead of its events, and an item's text only grows; the events may be
    read after the item was done and another added, which this does not mind)."""
    if not output:
        return output
    index, item_id = len(output) - 1, output[-1]["id"]
    events = ResponseEvent.objects.filter(response_id=response_id)
    added_events = events.filter(type=ITEM_ADDED).order_by("-sequence_number").values_list("sequence_number", "data")
    added = next((number for number, data in added_events
                  if (json.loads(data).get("item") or {}).get("id") == item_id), None)
    if added is None:
        return output
    texts: dict[tuple[str, Any], list[str]] = {}
    for event_type, data in (events.filter(sequence_number__gt=added, type__in=GROWING)
                             .order_by("sequence_number").values_list("type", "data")):
        event = json.loads(data)
        if event.get("output_index") != index or not isinstance(event.get("delta"), str):
            continue  # another item's, or not a delta as the builder writes them
        if event_type in CONTENT_DELTAS:
            place: tuple[str, Any] = ("content", event.get("content_index", 0))
        elif event_type == SUMMARY_DELTA:
            place = ("summary", event.get("summary_index", 0))
        else:
            place = (CALL_DELTAS[event_type], None)
        texts.setdefault(place, []).append(event["delta"])
    item = copy.deepcopy(output[-1])
    for (field, part), deltas in texts.items():
        streamed = "".join(deltas)
        if part is None:
            if len(streamed) > len(item.get(field) or ""):
                item[field] = streamed
        elif part < len(item[field]) and len(streamed) > len(item[field][part]["text"]):
            item[field][part]["text"] = streamed
    return [*output[:-1], item]


def referenced_item(tenant: Tenant, item_id: str) -> dict[str, Any] | None:
    """The item an ``item_reference`` names: an output or input item of one of the tenant's
    stored, unexpired, ended responses (the newest, should a client have reused an input
    id); a running response's items may still be half-written."""
    responses = unexpired(Response.objects.filter(tenant=tenant, store=True, status__in=TERMINAL_STATUSES), tenant)
    for model in (OutputItem, InputItem):
        data = (model.objects.filter(item_id=item_id, response__in=responses)
                .order_by("-response__created_at").values_list("data", flat=True).first())
        if data is not None:
            return data
    return None


def render_response(response: Response, include: list[str] | None = None) -> dict[str, Any]:
    return response_object(response, output_items(response), include=include)


def input_items_page(response: Response, *, after: str | None, limit: int, order: str) -> dict[str, Any]:
    """One page of a response's input items, in the ResponseItemList shape."""
    page, more = position_page(InputItem.objects.filter(response=response), after=after, limit=limit, order=order,
                               missing=f"No input item with id '{after}' in this response.")
    return list_object([item_object(item.data) for item in page], more)


def position_page(items: QuerySet, *, after: str | None, limit: int, order: str, missing: str,
                  ) -> tuple[list[Any], bool]:
    """One page of rows kept in order by ``position`` (input items, a conversation's items),
    after the one whose ``item_id`` is ``after`` (``missing``: the 400 when there is none),
    and whether more follow."""
    if after is not None:
        cursor = items.filter(item_id=after).values_list("position", flat=True).first()
        if cursor is None:
            raise InvalidRequest(missing, param="after")
        items = items.filter(position__gt=cursor) if order == "asc" else items.filter(position__lt=cursor)
    page = list(items.order_by("position" if order == "asc" else "-position")[: limit + 1])
    return page[:limit], len(page) > limit


def response_by_id(response_id: str) -> Response | None:
    """Any tenant's response by id: for code that already holds an id it was given by a
    tenant-scoped read (a reader waiting for the end of the response it streams)."""
    return Response.objects.filter(pk=response_id).first()


STREAM_STATE = f"SELECT status, last_sequence_number FROM {Response._meta.db_table} WHERE id = %s"


def stream_state(response_id: str) -> tuple[str, int] | None:
    """(status, last_sequence_number), or None once the response is deleted. Written out:
    every stream asks it whenever a read finds nothing new, and the ORM's building of the
    query cost more than running it."""
    with connection.cursor() as cursor:
        cursor.execute(STREAM_STATE, [response_id])
        return cursor.fetchone()
