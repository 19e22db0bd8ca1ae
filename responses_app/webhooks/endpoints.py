"""Webhook endpoints of a tenant, as ``client.webhooks`` manages them: create, retrieve,
update, list, delete, rotate the secret, send a test event.

Bodies come parsed (requests.py).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from responses_app.lib.asyncdb import db
from responses_app.lib.keyset import created_at_page
from responses_app.models import DeliveryStatus, Tenant, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from responses_app.tenancy.quotas import check_object_count
from responses_app.webhooks import delivery
from responses_app.webhooks.outbox import sample_delivery
from responses_app.webhooks.requests import EndpointFields
from responses_app.webhooks.signing import new_secret, secret_hint
from responses_app.wire.errors import InvalidRequest, NotFound, or_not_found
from responses_app.wire.objects import list_object

PREVIOUS_SECRET_KEPT = timedelta(hours=24)


def endpoint_object(endpoint: WebhookEndpoint, *, with_secret: bool = False) -> dict[str, Any]:
    """The WebhookEndpoint (or, with the secret, WebhookEndpointWithSecret) object."""
    data: dict[str, Any] = {
        "id": endpoint.pk,
        "object": "webhook_endpoint",
        "name": endpoint.name,
        "url": endpoint.url,
        "event_types": endpoint.event_types,
        "signing_secret_hint": secret_hint(endpoint.signing_secret),
        "created_at": int(endpoint.created_at.timestamp()),
        "updated_at": int(endpoint.updated_at.timestamp()),
    }
    if with_secret:
        data["signing_secret"] = endpoint.signing_secret
    return data


def get_endpoint(tenant: Tenant, endpoint_id: str) -> WebhookEndpoint:
    return or_not_found(WebhookEndpoint.objects.filter(tenant=tenant, pk=endpoint_id).first(),
                        _missing(endpoint_id), "webhook_endpoint_id")


def _missing(endpoint_id: str) -> str:
    return f"Webhook endpoint with id '{endpoint_id}' not found."


def list_page(tenant: Tenant, *, after: str | None, limit: int) -> dict[str, Any]:
    """Newest first, in the SDK's cursor-page shape."""
    page, more = created_at_page(
        WebhookEndpoint.objects.filter(tenant=tenant), after=after, limit=limit, order="desc",
        missing=lambda cursor, param: NotFound(_missing(cursor), param="webhook_endpoint_id"))
    return list_object([endpoint_object(endpoint) for endpoint in page], more)


def create_endpoint(tenant: Tenant, fields: EndpointFields) -> WebhookEndpoint:
    check_object_count(WebhookEndpoint.objects.filter(tenant=tenant), settings.TENANT_MAX_WEBHOOK_ENDPOINTS,
                       "webhook endpoints", "TENANT_MAX_WEBHOOK_ENDPOINTS")
    return WebhookEndpoint.objects.create(tenant=tenant, signing_secret=new_secret(), **fields.columns())


def update_endpoint(tenant: Tenant, endpoint_id: str, fields: EndpointFields) -> WebhookEndpoint:
    with transaction.atomic():
        endpoint = get_endpoint(tenant, endpoint_id)
        changed = {name: value for name, value in fields.columns().items() if getattr(endpoint, name) != value}
        if changed:  # an unchanged update does not advance updated_at (the SDK documents it)
            for name, value in changed.items():
                setattr(endpoint, name, value)
            endpoint.updated_at = timezone.now()
            endpoint.save()
    return endpoint


DELETE_TRIES = 3


def delete_endpoint(tenant: Tenant, endpoint_id: str) -> None:
    """Delete the endpoint with its deliveries. A response ending meanwhile may commit a
    delivery to it between the collection of its deliveries and the delete (the foreign
    key then fails at commit): the delete is tried again, and collects that one too."""
    for attempt in range(DELETE_TRIES):
        try:
            with transaction.atomic():
                get_endpoint(tenant, endpoint_id)
                WebhookEndpoint.objects.select_for_update().get(pk=endpoint_id).delete()
            return
        except IntegrityError:
            if attempt == DELETE_TRIES - 1:
                raise


def rotate_secret(tenant: Tenant, endpoint_id: str, keep: bool) -> WebhookEndpoint:
    """A new signing secret; ``keep``: the old one is still accepted for 24 hours."""
    with transaction.atomic():
        endpoint = get_endpoint(tenant, endpoint_id)
        endpoint.previous_signing_secret = endpoint.signing_secret if keep else ""
        endpoint.previous_secret_expires_at = timezone.now() + PREVIOUS_SECRET_KEPT if keep else None
        endpoint.signing_secret = new_secret()
        endpoint.updated_at = timezone.now()
        endpoint.save()
    return endpoint


async def send_test(tenant: Tenant, endpoint_id: str, event_type: str) -> dict[str, Any]:
    """Send a sample event now, once, and answer with the receiver's status code. ``success``
    is always true, as the SDK types it ("the test request completed"): ``status_code``
    tells how the receiver answered, and the delivery log counts only a 2xx (a redirect
    is not followed) as delivered, as for any delivery. The receiver is called from the
    event loop, between two short database calls: one that does not answer holds no
    request thread, only this request, for at most WEBHOOK_TIMEOUT_S."""
    sample = await db(_sample)(tenant, endpoint_id, event_type)
    attempt = await delivery.attempt(sample)
    await db(_record_test)(sample, attempt)
    if attempt.status_code is None:
        raise InvalidRequest(f"The webhook endpoint could not be reached: {attempt.error}", param="url",
                             code="webhook_endpoint_unreachable")
    return {"object": "webhook_endpoint.test", "webhook_endpoint_id": endpoint_id, "event_type": sample.event_type,
            "status_code": attempt.status_code, "success": True}


def _sample(tenant: Tenant, endpoint_id: str, event_type: str) -> WebhookDelivery:
    return sample_delivery(get_endpoint(tenant, endpoint_id), event_type)


def _record_test(sample: WebhookDelivery, attempt: WebhookAttempt) -> None:
    attempt.save()
    sample.attempts = 1
    sample.status = DeliveryStatus.DELIVERED if attempt.succeeded else DeliveryStatus.FAILED
    sample.save(update_fields=["attempts", "status"])
