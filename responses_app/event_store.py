"""Persisting what the event builder produced: one transaction per batch.

Every batch is guarded by the lease: the UPDATE that advances ``last_sequence_number``
only matches while this writer still owns the row, so a worker that lost its lease (the
reaper took over, or the response was deleted) writes nothing and learns it at once.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from . import doorbell
from .models import OutputItem, Response, ResponseEvent
from .observability import recorder


class LeaseLost(Exception):
    """This worker no longer owns the response (reaped, deleted or claimed elsewhere)."""


def save_batch(
    response: Response,
    owner: str,
    events: list[dict[str, Any]],
    items: list[tuple[int, dict[str, Any]]],
    final_fields: dict[str, Any] | None = None,
) -> bool:
    """Write events and changed items; with ``final_fields`` also end the response.

    Returns the response's ``cancel_requested`` flag as committed. Raises LeaseLost if
    ``owner`` does not hold the lease (nothing is written then).
    """
    now = timezone.now()
    fields: dict[str, Any] = {"lease_expires_at": now + timedelta(seconds=settings.LEASE_TTL_S)}
    if events:
        fields["last_sequence_number"] = events[-1]["sequence_number"]
    if final_fields is not None:
        fields.update(final_fields, lease_owner="", lease_expires_at=None, completed_at=now)
    started = time.perf_counter()
    with transaction.atomic():
        updated = Response.objects.filter(pk=response.pk, lease_owner=owner).update(**fields)
        if not updated:
            raise LeaseLost(response.pk)
        insert_events(response, events)
        for output_index, item in items:
            OutputItem.objects.update_or_create(
                response=response,
                output_index=output_index,
                defaults={"item_id": item["id"], "item_type": item["type"], "status": item.get("status", ""),
                          "data": item},
            )
        cancel_requested = Response.objects.filter(pk=response.pk).values_list("cancel_requested", flat=True)[0]
    recorder.batch_committed(response, events, time.perf_counter() - started)
    for name, value in fields.items():
        setattr(response, name, value)
    if events:
        transaction.on_commit(lambda: doorbell.ring(response.pk, events[-1]["sequence_number"]))
    return cancel_requested


def insert_events(response: Response, events: list[dict[str, Any]]) -> None:
    ResponseEvent.objects.bulk_create(
        ResponseEvent(response=response, sequence_number=e["sequence_number"], type=e["type"], data=e)
        for e in events
    )
