"""Webhook endpoints of a tenant, as ``client.webhooks`` manages them: create, retrieve,
update, list, delete, rotate the secret, send a test event.

Bodies are validated here with OpenAI's 400s; a URL must pass the same SSRF guard as the
tools' URLs (TOOLS_ALLOWED_PRIVATE_HOSTS lists the private hosts that may be reached).
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
from responses_app.webhooks.outbox import EVENT_TYPES, sample_delivery
from responses_app.webhooks.signing import new_secret, secret_hint
from responses_app.wire.errors import InvalidRequest, NotFound, invalid_type, or_not_found
from responses_app.wire.objects import list_object
from responses_app.wire.request_body import body_fields, json_object
from tools_app.url_guard import UrlRefused, check_url

MAX_NAME = 256
MAX_URL = 2048
PREVIOUS_SECRET_KEPT = timedelta(hours=24)
FIELDS = ("name", "url", "event_types")


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


def create_endpoint(tenant: Tenant, body: Any) -> WebhookEndpoint:
    check_object_count(WebhookEndpoint.objects.filter(tenant=tenant), settings.TENANT_MAX_WEBHOOK_ENDPOINTS,
                       "webhook endpoints", "TENANT_MAX_WEBHOOK_ENDPOINTS")
    fields = _fields(body, required=True)
    return WebhookEndpoint.objects.create(tenant=tenant, signing_secret=new_secret(), **fields)


def update_endpoint(tenant: Tenant, endpoint_id: str, body: Any) -> WebhookEndpoint:
    fields = _fields(body, required=False)
    with transaction.atomic():
        endpoint = get_endpoint(tenant, endpoint_id)
        changed = {name: value for name, value in fields.items() if getattr(endpoint, name) != value}
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


def rotate_secret(tenant: Tenant, endpoint_id: str, body: Any) -> WebhookEndpoint:
    body = json_object(body or {})
    keep = body.get("keep_old_secret_active_for_24_hours", False)
    if not isinstance(keep, bool):
        raise invalid_type("keep_old_secret_active_for_24_hours", "a boolean", keep)
    with transaction.atomic():
        endpoint = get_endpoint(tenant, endpoint_id)
        endpoint.previous_signing_secret = endpoint.signing_secret if keep else ""
        endpoint.previous_secret_expires_at = timezone.now() + PREVIOUS_SECRET_KEPT if keep else None
        endpoint.signing_secret = new_secret()
        endpoint.updated_at = timezone.now()
        endpoint.save()
    return endpoint


async def send_test(tenant: Tenant, endpoint_id: str, body: Any) -> dict[str, Any]:
    """Send a sample event now, once, and answer with the receiver's status code. ``success``
    is always true, as the SDK types it ("the test request completed"): ``status_code``
    tells how the receiver answered, and the delivery log counts only a 2xx (a redirect
    is not followed) as delivered, as for any delivery. The receiver is called from the
    event loop, between two short database calls: one that does not answer holds no
    request thread, only this request, for at most WEBHOOK_TIMEOUT_S."""
    sample = await db(_sample)(tenant, endpoint_id, body)
    attempt = await delivery.attempt(sample)
    await db(_record_test)(sample, attempt)
    if attempt.status_code is None:
        raise InvalidRequest(f"The webhook endpoint could not be reached: {attempt.error}", param="url",
                             code="webhook_endpoint_unreachable")
    return {"object": "webhook_endpoint.test", "webhook_endpoint_id": endpoint_id, "event_type": sample.event_type,
            "status_code": attempt.status_code, "success": True}


def _sample(tenant: Tenant, endpoint_id: str, body: Any) -> WebhookDelivery:
    body = json_object(body)
    event_type = body.get("event_type")
    if event_type not in EVENT_TYPES:
        raise InvalidRequest(f"'event_type' must be one of {', '.join(EVENT_TYPES)}.", param="event_type")
    return sample_delivery(get_endpoint(tenant, endpoint_id), event_type)


def _record_test(sample: WebhookDelivery, attempt: WebhookAttempt) -> None:
    attempt.save()
    sample.attempts = 1
    sample.status = DeliveryStatus.DELIVERED if attempt.succeeded else DeliveryStatus.FAILED
    sample.save(update_fields=["attempts", "status"])


def _fields(body: Any, *, required: bool) -> dict[str, Any]:
    fields = body_fields(body, FIELDS, required=FIELDS if required else ())
    if "name" in fields:
        _string(fields["name"], "name", MAX_NAME)
    if "url" in fields:
        _string(fields["url"], "url", MAX_URL)
        try:
            check_url(fields["url"])
        except UrlRefused as refused:
            raise InvalidRequest(f"The webhook URL is not allowed: {refused.message}.", param="url",
                                 code="invalid_url") from None
    if "event_types" in fields:
        fields["event_types"] = _event_types(fields["event_types"])
    return fields


def _string(value: Any, name: str, max_length: int) -> None:
    if not isinstance(value, str) or not value.strip():
        raise invalid_type(name, "a non-empty string", value)
    if len(value) > max_length:
        raise InvalidRequest(f"'{name}' is longer than {max_length} characters.", param=name,
                             code="string_above_max_length")


def _event_types(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise invalid_type("event_types", "a non-empty array of event types", value)
    for index, event_type in enumerate(value):
        if event_type not in EVENT_TYPES:
            raise InvalidRequest(f"Event type {event_type!r} is not sent by this server; it sends "
                                 f"{', '.join(EVENT_TYPES)}.", param=f"event_types[{index}]")
    return list(dict.fromkeys(value))
