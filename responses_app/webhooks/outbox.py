"""The webhook events of responses and batches, written where a response or a batch ends.

``response_ended`` runs inside the transaction of services/ended.end_response: the
delivery rows commit with the terminal status or not at all, and their first attempts are
queued once that commits (delivery.queue_due). Nothing here touches the network, so a
slow or dead receiver never delays a response.

As in OpenAI's API, background responses and batches notify (a client waiting on a
foreground response already has its answer), and only the endpoints of their own tenant.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from responses_app.models import (
    BATCH_WEBHOOK_EVENTS,
    WEBHOOK_EVENTS,
    Batch,
    Response,
    WebhookDelivery,
    WebhookEndpoint,
    new_response_id,
)
from responses_app.models.batches import new_batch_id
from responses_app.models.webhooks import new_event_id
from responses_app.webhooks import delivery

# What this server sends (GET /v1/webhook_event_types); endpoints subscribe to these.
EVENT_TYPES = (*WEBHOOK_EVENTS.values(), *BATCH_WEBHOOK_EVENTS.values())


def event_payload(event_id: str, event_type: str, subject_id: str, at: datetime) -> str:
    """The body of a delivery, in OpenAI's shape (the SDK's Response*WebhookEvent and
    Batch*WebhookEvent types): ``subject_id`` is the response's or the batch's id."""
    body: dict[str, Any] = {"id": event_id, "object": "event", "created_at": int(at.timestamp()), "type": event_type,
                            "data": {"id": subject_id}}
    return json.dumps(body, separators=(",", ":"))


def response_ended(response: Response) -> None:
    """Record the deliveries of ``response``'s terminal event (inside the ending transaction)."""
    # A batch's responses notify as the batch (batch_ended), not one by one.
    if response.background and not response.batch_id:
        _record(response.tenant_id, WEBHOOK_EVENTS.get(response.status), response.pk, response.completed_at)


def batch_ended(batch: Batch) -> None:
    """Record the deliveries of ``batch``'s end (inside the transaction that ends it)."""
    at = batch.failed_at or batch.expired_at or batch.cancelled_at or batch.completed_at
    _record(batch.tenant_id, BATCH_WEBHOOK_EVENTS.get(batch.status), batch.pk, at)


def _record(tenant_id: int, event_type: str | None, subject_id: str, at: datetime) -> None:
    if event_type is None:
        return
    endpoints = [endpoint for endpoint in WebhookEndpoint.objects.filter(tenant_id=tenant_id)
                 if event_type in endpoint.event_types]
    if not endpoints:
        return
    event_id = new_event_id()
    payload = event_payload(event_id, event_type, subject_id, at)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=endpoint, event_id=event_id, event_type=event_type, response_id=subject_id,
                        payload=payload, next_attempt_at=at)
        for endpoint in endpoints
    )
    endpoint_ids = [endpoint.pk for endpoint in endpoints]
    transaction.on_commit(lambda: delivery.queue_due(endpoint_ids))


def sample_delivery(endpoint: WebhookEndpoint, event_type: str) -> WebhookDelivery:
    """A delivery of a sample event for ``client.webhooks.test`` (its response or batch id is made up)."""
    event_id = new_event_id()
    subject = new_batch_id() if event_type.startswith("batch.") else new_response_id()  # made up
    return WebhookDelivery.objects.create(
        endpoint=endpoint, event_id=event_id, event_type=event_type, response_id="",
        payload=event_payload(event_id, event_type, subject, timezone.now()), next_attempt_at=None)
