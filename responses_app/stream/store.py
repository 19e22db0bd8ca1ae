"""Persisting what the event builder produced, and the one function that ends a response.

A worker commits its events in batches, one transaction each, guarded by its lease: the
UPDATE that advances ``last_sequence_number`` only matches while the writer still owns
the row, so a worker that lost its lease (the reaper took over, the response was
deleted or ended by someone else) writes nothing and learns it at once.

``write_terminal`` is the only code that gives a response its terminal status; it runs
inside services/ended.end_response, through which the worker, the reaper, cancel and
delete all end a response, and which then runs what follows a response's end.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, TypedDict, Unpack

import orjson
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from psycopg.types.json import Jsonb

from responses_app.models import (
    TERMINAL_EVENT_TYPES,
    TERMINAL_STATUSES,
    OutputItem,
    Response,
    ResponseEvent,
    ResponseStatus,
)
from responses_app.observability import recorder
from responses_app.stream import doorbell
from responses_app.stream.builder import EventBuilder
from responses_app.stream.resume import resume_point
from responses_app.stream.sse import event_json, frame

EVENT_COLUMNS = f"{ResponseEvent._meta.db_table} (response_id, sequence_number, type, data, created_at)"
INSERT_EVENTS = f"INSERT INTO {EVENT_COLUMNS} VALUES "
EVENT_ROW = "(%s, %s, %s, %s, %s)"
INSERT_EVENT = INSERT_EVENTS + EVENT_ROW
COPY_EVENTS = f"COPY {EVENT_COLUMNS} FROM STDIN"
# Fewer event rows than this are written by a statement, not a COPY, whose own exchanges
# cost more: on PostgreSQL a group of fewer events is one statement (GROUP_EVENTS below), and
# the rows of a response's end or a create one multi-row INSERT.
COPY_FROM_ROWS = 32
# A batch's statements, written out (the ORM's compiling of them cost more of a worker's CPU
# than running them): every lease of a group checked, its last sequence number advanced and
# its cancel flag read in one statement (the VALUES rows are (id, owner, last sequence number
# or NULL for a batch without events, which leaves it, whether to renew the lease), named
# column1..4 by PostgreSQL and SQLite alike), and each changed item written whether or not it
# has a row yet. A lease is renewed only every LEASE_RENEW_S (the writer says when): its
# column is indexed (the reaper's), so writing it made every batch's UPDATE a new row version
# with an entry in each of the table's indexes, where an UPDATE of last_sequence_number alone
# is a heap-only one on PostgreSQL (migration 0019 leaves the pages room for it).
_TABLE = Response._meta.db_table
RENEW_LEASES = (f"UPDATE {_TABLE} SET lease_expires_at = CASE WHEN v.column4 THEN %s "
                f"ELSE {_TABLE}.lease_expires_at END, "
                f"last_sequence_number = COALESCE(v.column3, {_TABLE}.last_sequence_number) FROM (VALUES {{}}) "
                f"AS v WHERE {_TABLE}.id = v.column1 AND {_TABLE}.lease_owner = v.column2 "
                f"RETURNING {_TABLE}.id, {_TABLE}.cancel_requested")
LEASE_ROW = "(%s, %s, CAST(%s AS BIGINT), CAST(%s AS BOOLEAN))"
ITEM_COLUMNS = f"{OutputItem._meta.db_table} (response_id, output_index, item_id, item_type, status, data)"
ITEM_ROW = "(%s, %s, %s, %s, %s, %s)"
ITEM_CONFLICT = ("ON CONFLICT (response_id, output_index) DO UPDATE SET item_id = excluded.item_id, "
                 "item_type = excluded.item_type, status = excluded.status, data = excluded.data")
UPSERT_ITEM = f"INSERT INTO {ITEM_COLUMNS} VALUES {ITEM_ROW} {ITEM_CONFLICT}"
# On PostgreSQL a group of fewer than COPY_FROM_ROWS events is one statement, run on its own
# (no BEGIN and COMMIT: a statement is atomic): the leases renewed as above, and only the
# events and items of the responses whose lease held written, in data-modifying CTEs. Each
# statement costs a worker about 150 µs of CPU, and a group in a transaction took five; a
# larger group (a delta per token, or a node's hundreds of responses) goes in a transaction
# with a COPY, whose rows cost less than a statement's parameters.
GROUP_EVENTS = (f", events AS (INSERT INTO {EVENT_COLUMNS} SELECT * FROM (VALUES {{}}) AS e "
                "WHERE e.column1 IN (SELECT id FROM renewed))")
GROUP_ITEMS = (f", items AS (INSERT INTO {ITEM_COLUMNS} SELECT * FROM (VALUES {{}}) AS i "
               f"WHERE i.column1 IN (SELECT id FROM renewed) {ITEM_CONFLICT})")
# The row's fields that end_response writes.
TERMINAL_FIELDS = ("status", "error", "incomplete_details", "usage", "completed_at", "last_sequence_number",
                   "lease_owner", "lease_expires_at")


class LeaseLost(Exception):
    """This worker no longer owns the response (reaped, deleted, ended or claimed elsewhere)."""


def save_batch(response: Response, owner: str, builder: EventBuilder) -> bool:
    """Write the builder's new events and changed items and renew the lease.

    Returns the response's ``cancel_requested`` flag as committed. Raises LeaseLost if
    ``owner`` does not hold the lease (nothing is written then).
    """
    events, items = builder.drain()
    return save_events(response, owner, events, items)


@dataclass
class Batch:
    """One response's events and items drained from its builder, and its lease holder."""

    response: Response
    owner: str
    events: list[dict[str, Any]]
    items: list[tuple[int, dict[str, Any]]]
    renew_lease: bool = True  # besides checking it (the writer renews it every LEASE_RENEW_S)


def save_events(response: Response, owner: str, events: list[dict[str, Any]],
                items: list[tuple[int, dict[str, Any]]]) -> bool:
    """save_batch for events and items already drained from the builder, so that a writer
    can try them again when the database broke before they were committed: a group of one."""
    renewed = save_group([Batch(response, owner, events, items)])
    if response.pk not in renewed:
        raise LeaseLost(response.pk)
    return renewed[response.pk]


def save_group(batches: list[Batch]) -> dict[str, bool]:
    """save_events for several responses (one batch each) at once: on PostgreSQL a group
    of fewer than COPY_FROM_ROWS events is one statement (the leases, the events, the
    items); any other is one transaction (a statement checks all the leases and renews
    those due, one writes all the events, one all the items); the doorbells ring in one round trip. Returns the
    cancel flag of each response whose lease held, by id; a response missing from it lost
    its lease, and nothing of it is written. A failing statement fails the whole group
    (nothing is written)."""
    lease_expires_at = timezone.now() + timedelta(seconds=settings.LEASE_TTL_S)
    params: list[Any] = [connection.ops.adapt_datetimefield_value(lease_expires_at)]
    for batch in batches:
        params += [batch.response.pk, batch.owner, batch.events[-1]["sequence_number"] if batch.events else None,
                   batch.renew_lease]
    renew = RENEW_LEASES.format(", ".join([LEASE_ROW] * len(batches)))
    started = time.perf_counter()
    if connection.vendor == "postgresql" and sum(len(batch.events) for batch in batches) < COPY_FROM_ROWS:
        renewed = _save_group_in_one_statement(batches, renew, params)
    else:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute(renew, params)
            renewed = {response_id: bool(cancel) for response_id, cancel in cursor.fetchall()}
            _write_many([batch for batch in batches if batch.response.pk in renewed])
    seconds = time.perf_counter() - started
    held = [batch for batch in batches if batch.response.pk in renewed]
    for batch in held:
        recorder.batch_committed(batch.response, batch.events, seconds)
        if batch.renew_lease:
            batch.response.lease_expires_at = lease_expires_at
        if batch.events:
            batch.response.last_sequence_number = batch.events[-1]["sequence_number"]
    return renewed


class Terminal(TypedDict, total=False):
    """How a response ends, and who may end it (write_terminal's keyword arguments)."""

    error: dict[str, Any] | None
    incomplete_details: dict[str, Any] | None
    usage: dict[str, Any] | None
    builder: EventBuilder | None
    lease_owner: str | None
    only_if_status: str | None
    only_if_lease_expired_before: datetime | None
    # The caller deletes the response in the same transaction: no frames are pushed for
    # events that will never be read (its readers end on the deletion's ring instead).
    deleted_with_it: bool


def write_terminal(response_id: str, status: str, **terminal: Unpack[Terminal]) -> Response | None:
    """Give a response its terminal ``status``, inside the caller's transaction
    (services/ended.end_response): the open item closed ``incomplete`` with its done
    events, the terminal event, and the row's status, ``completed_at``, error,
    incomplete_details, usage and released lease. Returns the ended response.

    The worker that holds the lease passes ``lease_owner`` and its ``builder`` (with the
    events it has not written yet). Anyone else (cancel of a queued response, the reaper,
    delete) passes neither: the row is locked and the builder rebuilt from it, so the
    worker's next lease-guarded write fails. The ``only_if_*`` guards are checked under
    that lock. Returns None, writing nothing, when the response is gone, already ended,
    or a guard does not hold.

    The terminal event's response object is built from the same values the row gets
    (one ``completed_at``), so it equals what ``GET /v1/responses/{id}`` answers.
    """
    lease_owner, only_if_status = terminal.get("lease_owner"), terminal.get("only_if_status")
    only_if_lease_expired_before, builder = terminal.get("only_if_lease_expired_before"), terminal.get("builder")
    # No savepoint of its own: its caller's transaction fails with it anyway, and the
    # SAVEPOINT and RELEASE were two of the nine statements of a worker's end.
    with transaction.atomic(savepoint=False):
        rows = Response.objects.select_for_update().filter(pk=response_id).exclude(status__in=TERMINAL_STATUSES)
        if lease_owner is not None:
            rows = rows.filter(lease_owner=lease_owner)
        if only_if_status is not None:
            rows = rows.filter(status=only_if_status)
        if only_if_lease_expired_before is not None:
            rows = rows.filter(lease_expires_at__lt=only_if_lease_expired_before)
        if builder is None:
            locked = rows.first()
            if locked is None:
                return None
            builder = EventBuilder(locked, next_sequence_number=locked.last_sequence_number + 1,
                                   resumed=resume_point(locked))
            steer_requested = locked.steer_requested
        else:
            # The worker has the row: lock it and read the one column it may have missed,
            # not the whole row (its JSON columns made this SELECT a third of an end's CPU).
            steer_requested = next(iter(rows.values_list("steer_requested", flat=True)), None)
            if steer_requested is None:
                return None
        response = builder.response
        # The worker's copy was read when it claimed the response; steering sets the flag
        # later, under this lock (what follows the end reads it: services/steered.py).
        response.steer_requested = steer_requested
        builder.close_open_item(failed=status == ResponseStatus.FAILED)
        response.status = status
        response.error = terminal.get("error")
        response.incomplete_details = terminal.get("incomplete_details")
        response.usage = terminal.get("usage")
        response.completed_at = timezone.now()
        builder.terminal(status)
        events, items = builder.drain(every_item=True)
        response.last_sequence_number = events[-1]["sequence_number"]
        response.lease_owner, response.lease_expires_at = "", None
        response.save(update_fields=TERMINAL_FIELDS)
        _write_many([Batch(response, "", events, items)], ring=not terminal.get("deleted_with_it", False))
    return response


def insert_events(response: Response, events: list[dict[str, Any]]) -> None:
    """The events' rows (a create's response.created)."""
    _insert_event_rows(_event_rows(response, events, [event_json(event) for event in events]))


def _event_rows(response: Response, events: list[dict[str, Any]], texts: list[str]) -> list[tuple[Any, ...]]:
    created_at = connection.ops.adapt_datetimefield_value(timezone.now())
    return [(response.pk, event["sequence_number"], event["type"], text, created_at)
            for event, text in zip(events, texts, strict=True)]


def _insert_event_rows(rows: list[tuple[Any, ...]]) -> None:
    """Event rows inserted from the cursor: a batch is most of what a worker does, and
    bulk_create's model instances and (on PostgreSQL) its arrays of JSON text, quoted in
    Python, took half of a worker's CPU. On PostgreSQL a COPY (psycopg's executemany is
    still one statement per row in its pipeline: 14 µs of the worker's CPU per event, the
    COPY 6), or one multi-row INSERT for a few rows; elsewhere sqlite3's executemany,
    which loops in C."""
    if not rows:
        return
    with connection.cursor() as cursor:
        if connection.vendor != "postgresql":
            cursor.executemany(INSERT_EVENT, rows)
            return
        if len(rows) < COPY_FROM_ROWS:
            cursor.execute(INSERT_EVENTS + ", ".join([EVENT_ROW] * len(rows)), [value for row in rows for value in row])
            return
        # Django's error classes, as for any statement (IntegrityError, OperationalError).
        with connection.wrap_database_errors, cursor.cursor.copy(COPY_EVENTS) as copy:
            for row in rows:
                copy.write_row(row)


def _save_group_in_one_statement(batches: list[Batch], renew: str, params: list[Any]) -> dict[str, bool]:
    """save_group's writes on PostgreSQL: one statement (GROUP_EVENTS, GROUP_ITEMS), then
    the doorbells of the responses whose lease held."""
    event_rows, item_rows, rings = _rows(batches)
    statement, values = f"WITH renewed AS ({renew})", list(params)
    if event_rows:
        statement += GROUP_EVENTS.format(", ".join([EVENT_ROW] * len(event_rows)))
        values += [value for row in event_rows for value in row]
    if item_rows:
        statement += GROUP_ITEMS.format(", ".join([ITEM_ROW] * len(item_rows)))
        values += [value for row in item_rows for value in row]
    with connection.cursor() as cursor:
        cursor.execute(statement + " SELECT id, cancel_requested FROM renewed", values)
        renewed = {response_id: bool(cancel) for response_id, cancel in cursor.fetchall()}
    held_rings = [(response_id, pushed) for response_id, pushed in rings if response_id in renewed]
    if held_rings:
        # At once when the statement ran on its own; when the caller's transaction commits otherwise.
        transaction.on_commit(lambda: doorbell.ring_many(held_rings))
    return renewed


def _rows(batches: list[Batch], ring: bool = True) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]],
                                                           list[tuple[str, doorbell.Pushed]]]:
    """The batches' event rows, item rows and (unless ``ring`` is False) doorbell messages
    with their events' frames, for the live readers."""
    event_rows: list[tuple[Any, ...]] = []
    item_rows: list[tuple[Any, ...]] = []
    rings: list[tuple[str, doorbell.Pushed]] = []
    for batch in batches:
        texts = [event_json(event) for event in batch.events]
        event_rows += _event_rows(batch.response, batch.events, texts)
        item_rows += [(batch.response.pk, output_index, item["id"], item["type"], item.get("status", ""),
                       _item_json(item)) for output_index, item in batch.items]
        if batch.events and ring:
            events = batch.events
            frames = b"".join(frame(event["type"], text) for event, text in zip(events, texts, strict=True))
            rings.append((batch.response.pk, doorbell.Pushed(events[0]["sequence_number"],
                                                             events[-1]["sequence_number"],
                                                             events[-1]["type"] in TERMINAL_EVENT_TYPES, frames)))
    return event_rows, item_rows, rings


def _item_json(item: dict[str, Any]) -> Any:
    """An item's ``data`` parameter, encoded by orjson: an item in progress is written again
    with each commit, its text growing (a 3.3 kB message: 7.5 µs with the standard library,
    0.3 with orjson; ten times that for an answer ten times longer)."""
    if connection.vendor == "postgresql":
        return Jsonb(item, dumps=orjson.dumps)
    return orjson.dumps(item).decode()


def _write_many(batches: list[Batch], ring: bool = True) -> None:
    """Inside the caller's transaction: insert the batches' events, upsert their items, and
    once it commits ring each response's doorbell with its events' frames (for the live
    readers), unless ``ring`` is False."""
    event_rows, item_rows, rings = _rows(batches, ring)
    _insert_event_rows(event_rows)
    if item_rows:
        with connection.cursor() as cursor:
            cursor.executemany(UPSERT_ITEM, item_rows)
    if rings:
        transaction.on_commit(lambda: doorbell.ring_many(rings))
