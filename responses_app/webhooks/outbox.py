"""The webhook events of responses, written where a response ends.

``response_ended`` runs inside the transaction of services/ended.end_response: the
delivery rows commit with the terminal status or not at all, and their first attempts are
queued once that commits (delivery.queue_due). Nothing here touches the network, so a
slow or dead receiver never delays a response.

As in OpenAI's API, background responses notify (a client waiting on a foreground one
already has its answer), and only the endpoints of the response's own tenant.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from responses_app.models import WEBHOOK_EVENTS, Response, WebhookDelivery, WebhookEndpoint, new_response_id
from responses_app.models.webhooks import new_event_id
from responses_app.webhooks import delivery

# What this server sends (GET /v1/webhook_event_types); endpoints subscribe to these.
EVENT_TYPES = tuple(WEBHOOK_EVENTS.values())


def event_payload(event_id: str, event_type: str, response_id: str, at: datetime) -> str:
    """The body of a delivery, in OpenAI's shape (the SDK's Response*WebhookEvent types)."""
    body: dict[str, Any] = {"id": event_id, "object": "event", "created_at": int(at.timestamp()), "type": event_type,
                            "data": {"id": response_id}}
    return json.dumps(body, separators=(",", ":"))


def response_ended(response: Response) -> None:
    """Record the deliveries of ``response``'s terminal event (inside the ending transaction)."""
    event_type = WEBHOOK_EVENTS.get(response.status)
    if not response.background or event_type is None:
        return
    endpoints = [endpoint for endpoint in WebhookEndpoint.objects.filter(tenant_id=response.tenant_id)
                 if event_type in endpoint.event_types]
    if not endpoints:
        return
    event_id = new_event_id()
    payload = event_payload(event_id, event_type, response.pk, response.completed_at)
    WebhookDelivery.objects.bulk_create(
        WebhookDelivery(endpoint=endpoint, event_id=event_id, event_type=event_type, response_id=response.pk,
                        payload=payload, next_attempt_at=response.completed_at)
        for endpoint in endpoints
    )
    endpoint_ids = [endpoint.pk for endpoint in endpoints]
    transaction.on_commit(lambda: delivery.queue_due(endpoint_ids))


def sample_delivery(endpoint: WebhookEndpoint, event_type: str) -> WebhookDelivery:
    """A delivery of a sample event for ``client.webhooks.test`` (its response id is made up)."""
    event_id = new_event_id()
    return WebhookDelivery.objects.create(
        endpoint=endpoint, event_id=event_id, event_type=event_type, response_id="",
        payload=event_payload(event_id, event_type, new_response_id(), timezone.now()), next_attempt_at=None)
