"""Delivery of webhook events: at least once, signed, retried with backoff.

Each attempt is a Celery task on the WEBHOOK_QUEUE (``deliver_webhook``). It claims the
delivery with a compare-and-set on ``next_attempt_at`` (pushed past the attempt's own
timeout, so that a worker lost mid-attempt is retried by the sweep and two attempts never
overlap), POSTs the exact stored body with fresh Standard Webhooks headers, the same
``webhook-id`` each time, and records the attempt. A 2xx delivers it; anything else is
retried after WEBHOOK_RETRY_BASE_S · 2^(n-1) seconds (at most WEBHOOK_RETRY_MAX_S), with
jitter so that the retries of one outage do not arrive together, until the delivery is
WEBHOOK_RETRY_WINDOW_S old. The sweep (``send_due``, on beat) sends the attempts that
are due. URLs are checked by the tools' SSRF guard on every attempt, and connections go
only to the addresses that it checked.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import timedelta

import httpx2
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from responses_app.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from responses_app.webhooks.signing import signed_headers
from tools_app.url_guard import UrlRefused, guarded_http_client

log = logging.getLogger(__name__)

DELIVER_TASK = "responses_app.tasks.deliver_webhook"
# Beyond its timeout, the time an attempt's claim lasts (recording the outcome).
CLAIM_MARGIN_S = 30.0
# The sweep sends at most this many due attempts per run.
SWEEP_LIMIT = 1000
MAX_ERROR_LENGTH = 500


def retry_delay(failed_attempts: int) -> float:
    """Seconds before the next attempt after ``failed_attempts`` failed ones."""
    delay = min(settings.WEBHOOK_RETRY_BASE_S * 2 ** (failed_attempts - 1), settings.WEBHOOK_RETRY_MAX_S)
    return delay * random.uniform(0.5, 1.0)


def send_attempts(delivery_ids: list[int]) -> None:
    """Queue an attempt of each delivery; one that cannot be queued now is the sweep's."""
    for delivery_id in delivery_ids:
        try:
            current_app.send_task(DELIVER_TASK, args=[delivery_id], queue=settings.WEBHOOK_QUEUE)
        except Exception as error:
            log.warning("webhook delivery %s not queued (%s); the sweep will send it", delivery_id, error)
            return


def send_due() -> int:
    """Queue an attempt of every pending delivery that is due."""
    due = list(WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=timezone.now())
               .order_by("next_attempt_at").values_list("pk", flat=True)[:SWEEP_LIMIT])
    send_attempts(due)
    return len(due)


def send_again(delivery: WebhookDelivery) -> None:
    """An operator's "send again": a new attempt now, with the same webhook-id and body."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.PENDING,
                                                          next_attempt_at=timezone.now())
    send_attempts([delivery.pk])


def deliver(delivery_id: int) -> None:
    """One attempt of a delivery, if it is due and no other attempt holds it."""
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
    if not claimed.update(next_attempt_at=now + timedelta(seconds=settings.WEBHOOK_TIMEOUT_S + CLAIM_MARGIN_S),
                          attempts=F("attempts") + 1):
        return
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    attempt = post(delivery)
    with transaction.atomic():
        attempt.save()
        if attempt.status_code is not None and 200 <= attempt.status_code < 300:
            delivery.status, delivery.delivered_at, delivery.next_attempt_at = DeliveryStatus.DELIVERED, now, None
        else:
            next_at = timezone.now() + timedelta(seconds=retry_delay(delivery.attempts))
            if next_at > delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_S):
                delivery.status, delivery.next_attempt_at = DeliveryStatus.FAILED, None
                log.warning("webhook delivery %s to %s given up after %d attempts", delivery.pk,
                            delivery.endpoint.url, delivery.attempts)
            else:
                delivery.next_attempt_at = next_at
        delivery.save(update_fields=["status", "delivered_at", "next_attempt_at"])


def post(delivery: WebhookDelivery) -> WebhookAttempt:
    """POST the delivery to its endpoint once; the attempt as it went (not saved)."""
    endpoint = delivery.endpoint
    headers = signed_headers(delivery.event_id, int(time.time()), delivery.payload, signing_secrets(endpoint))
    started = time.monotonic()
    status_code, error = None, ""
    try:
        status_code = asyncio.run(_post(endpoint.url, delivery.payload, headers))
    except UrlRefused as refused:
        error = refused.message
    except Exception as failure:  # timeouts, refused connections, TLS: retried like a 5xx
        error = f"{type(failure).__name__}: {failure}"
    latency_ms = int((time.monotonic() - started) * 1000)
    return WebhookAttempt(delivery=delivery, status_code=status_code, error=error[:MAX_ERROR_LENGTH],
                          latency_ms=latency_ms)


def signing_secrets(endpoint: WebhookEndpoint) -> list[str]:
    """The secrets a delivery is signed with now: the current one, and the previous one
    while a rotation keeps it."""
    keep_previous = (endpoint.previous_signing_secret and endpoint.previous_secret_expires_at
                     and endpoint.previous_secret_expires_at > timezone.now())
    return [endpoint.signing_secret, endpoint.previous_signing_secret] if keep_previous else [endpoint.signing_secret]


async def _post(url: str, body: str, headers: dict[str, str]) -> int:
    timeout = settings.WEBHOOK_TIMEOUT_S
    async with guarded_http_client(timeout=httpx2.Timeout(timeout)) as client:
        # The whole attempt, not only each phase of it, ends at the timeout (a receiver
        # that trickles its answer must not hold a worker thread).
        response = await asyncio.wait_for(client.post(url, content=body.encode(), headers=headers), timeout)
        return response.status_code
