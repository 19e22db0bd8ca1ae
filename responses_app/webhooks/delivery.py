"""Delivery of webhook events: at least once, signed, retried with backoff, and fair.

Each attempt is a Celery task on the WEBHOOK_QUEUE (``deliver_webhook``). Attempts are
queued by ``queue_due``: the due deliveries, oldest first, but at most
WEBHOOK_MAX_QUEUED_PER_ENDPOINT queued or running per endpoint, so that an endpoint with
a backlog (a dead receiver, a burst) never fills the queue ahead of another endpoint's,
another tenant's, deliveries. It runs when a response's deliveries are written, after
each attempt (for that endpoint's next one) and on beat (``WEBHOOK_SWEEP_INTERVAL_S``).
Each endpoint's share is counted and marked under its row lock, so passes that run at
once never queue more; a delivery queued longer ago than an attempt can take is taken for
lost and queued again.

An attempt POSTs the exact stored body with fresh Standard Webhooks headers, the same
``webhook-id`` each time, and records itself. A 2xx delivers it; anything else is
retried after WEBHOOK_RETRY_BASE_S · 2^(n-1) seconds (at most WEBHOOK_RETRY_MAX_S), with
jitter so that the retries of one outage do not arrive together, until the delivery is
WEBHOOK_RETRY_WINDOW_S old. URLs are checked by the tools' SSRF guard on every attempt,
and connections go only to the addresses that it checked.
"""

from __future__ import annotations

import asyncio
import logging
import random
import time
from datetime import datetime, timedelta

import httpx2
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from responses_app.models import DeliveryStatus, WebhookAttempt, WebhookDelivery, WebhookEndpoint
from responses_app.webhooks.signing import signed_headers
from tools_app.url_guard import UrlRefused, guarded_http_client

log = logging.getLogger(__name__)

DELIVER_TASK = "responses_app.tasks.deliver_webhook"
# Beyond its timeout, how long a queued attempt may take to start and record its outcome.
QUEUED_MARGIN_S = 60.0
# One pass queues at most this many attempts.
SWEEP_LIMIT = 1000
MAX_ERROR_LENGTH = 500


def retry_delay(failed_attempts: int) -> float:
    """Seconds before the next attempt after ``failed_attempts`` failed ones."""
    delay = min(settings.WEBHOOK_RETRY_BASE_S * 2 ** (failed_attempts - 1), settings.WEBHOOK_RETRY_MAX_S)
    return delay * random.uniform(0.5, 1.0)


def queue_due(endpoint_ids: list[str] | None = None) -> int:
    """Queue an attempt of each due delivery (of ``endpoint_ids``, or of every endpoint)
    within each endpoint's share; returns how many were queued."""
    now = timezone.now()
    due = (WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now)
           .exclude(queued_at__gt=_lost_before(now)))
    if endpoint_ids is not None:
        due = due.filter(endpoint_id__in=endpoint_ids)
    endpoints = set(due.values_list("endpoint_id", flat=True)[:SWEEP_LIMIT])
    return sum(_queue_for_endpoint(endpoint_id, now) for endpoint_id in endpoints)


def _queue_for_endpoint(endpoint_id: str, now: datetime) -> int:
    with transaction.atomic():
        # Under the endpoint's row lock: the passes that run at once (responses ending,
        # attempts finishing, the sweep) count and mark its share one after another.
        if WebhookEndpoint.objects.select_for_update().filter(pk=endpoint_id).first() is None:
            return 0
        pending = WebhookDelivery.objects.filter(endpoint_id=endpoint_id, status=DeliveryStatus.PENDING)
        queued = Q(queued_at__gt=_lost_before(now))
        room = settings.WEBHOOK_MAX_QUEUED_PER_ENDPOINT - pending.filter(queued).count()
        if room <= 0:
            return 0
        ids = list(pending.filter(next_attempt_at__lte=now).exclude(queued).order_by("next_attempt_at")
                   .values_list("pk", flat=True)[:room])
        pending.filter(pk__in=ids).update(queued_at=now)

        def send_all() -> None:
            for delivery_id in ids:
                _send(delivery_id)

        transaction.on_commit(send_all)
    return len(ids)


def send_again(delivery: WebhookDelivery) -> None:
    """An operator's "send again": a new attempt now, with the same webhook-id and body."""
    WebhookDelivery.objects.filter(pk=delivery.pk).update(status=DeliveryStatus.PENDING,
                                                          next_attempt_at=timezone.now(), queued_at=None)
    queue_due([delivery.endpoint_id])


def deliver(delivery_id: int) -> None:
    """One attempt of a queued delivery, then the next of its endpoint's due ones."""
    now = timezone.now()
    claimed = WebhookDelivery.objects.filter(pk=delivery_id, status=DeliveryStatus.PENDING,
                                             queued_at__gt=_lost_before(now))
    if not claimed.update(attempts=F("attempts") + 1):
        return
    delivery = WebhookDelivery.objects.select_related("endpoint").get(pk=delivery_id)
    attempt = post(delivery)
    with transaction.atomic():
        # Its endpoint (and so the delivery) may have been deleted during the POST.
        if not WebhookDelivery.objects.select_for_update().filter(pk=delivery_id).exists():
            return
        attempt.save()
        if attempt.succeeded:
            delivery.status, delivery.delivered_at, delivery.next_attempt_at = DeliveryStatus.DELIVERED, now, None
        else:
            next_at = timezone.now() + timedelta(seconds=retry_delay(delivery.attempts))
            if next_at > delivery.created_at + timedelta(seconds=settings.WEBHOOK_RETRY_WINDOW_S):
                delivery.status, delivery.next_attempt_at = DeliveryStatus.FAILED, None
                log.warning("webhook delivery %s to %s given up after %d attempts", delivery.pk,
                            delivery.endpoint.url, delivery.attempts)
            else:
                delivery.next_attempt_at = next_at
        delivery.queued_at = None
        delivery.save(update_fields=["status", "delivered_at", "next_attempt_at", "queued_at"])
    queue_due([delivery.endpoint_id])


def post(delivery: WebhookDelivery) -> WebhookAttempt:
    """POST the delivery to its endpoint once; the attempt as it went (not saved)."""
    return asyncio.run(attempt(delivery))


async def attempt(delivery: WebhookDelivery) -> WebhookAttempt:
    """``post`` on the running event loop: no database work, so that a web process can
    call a receiver without holding one of its request threads while it waits."""
    endpoint = delivery.endpoint
    headers = signed_headers(delivery.event_id, int(time.time()), delivery.payload, signing_secrets(endpoint))
    started = time.monotonic()
    status_code, error = None, ""
    try:
        status_code = await _post(endpoint.url, delivery.payload, headers)
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


def _lost_before(now: datetime) -> datetime:
    return now - timedelta(seconds=settings.WEBHOOK_TIMEOUT_S + QUEUED_MARGIN_S)


def _send(delivery_id: int) -> None:
    try:
        current_app.send_task(DELIVER_TASK, args=[delivery_id], queue=settings.WEBHOOK_QUEUE)
    except Exception as error:  # the broker is down: the mark lapses and a later sweep sends it
        log.warning("webhook delivery %s not queued (%s)", delivery_id, error)


async def _post(url: str, body: str, headers: dict[str, str]) -> int:
    timeout = settings.WEBHOOK_TIMEOUT_S
    async with guarded_http_client(timeout=httpx2.Timeout(timeout)) as client:
        # The whole attempt, not only each phase of it, ends at the timeout (a receiver
        # that trickles its answer must not hold a worker thread).
        response = await asyncio.wait_for(client.post(url, content=body.encode(), headers=headers), timeout)
        return response.status_code
