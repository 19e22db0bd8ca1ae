"""Webhook endpoints and their deliveries: the outbox of response.* events.

A delivery row is written in the transaction that ends the response, so an event is
never lost between the response's end and its send; the row then records every attempt.
"""

from __future__ import annotations

from django.db import models

from responses_app.lib.ids import new_id
from responses_app.models.responses import Tenant


def new_endpoint_id() -> str:
    return new_id("wh")


def new_event_id() -> str:
    return new_id("evt")


class WebhookEndpoint(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_endpoint_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="webhook_endpoints")
    name = models.CharField(max_length=256)
    url = models.URLField(max_length=2048)
    event_types = models.JSONField(default=list)
    # ``whsec_`` + base64 of the key, as Standard Webhooks and the SDK's unwrap expect.
    # Kept in the clear: every delivery is signed with it.
    signing_secret = models.CharField(max_length=128)
    # After a rotation that keeps the old secret for 24 hours, deliveries carry both signatures.
    previous_signing_secret = models.CharField(max_length=128, blank=True)
    previous_secret_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"])]

    def __str__(self) -> str:
        return f"{self.name} ({self.url})"


class DeliveryStatus(models.TextChoices):
    PENDING = "pending"
    DELIVERED = "delivered"
    FAILED = "failed", "Failed (gave up)"


class WebhookDelivery(models.Model):
    """One event for one endpoint. ``event_id`` is the payload's id and the ``webhook-id``
    header of every attempt, so a receiver can drop repeats (delivery is at least once)."""

    endpoint = models.ForeignKey(WebhookEndpoint, on_delete=models.CASCADE, related_name="deliveries")
    event_id = models.CharField(max_length=64, default=new_event_id)
    event_type = models.CharField(max_length=64)
    response_id = models.CharField(max_length=64, blank=True)
    # The exact body that is signed and sent, byte for byte on every attempt.
    payload = models.TextField()
    status = models.CharField(max_length=16, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    # When the next attempt is due, and when a task for it was queued (null: none is). A
    # queued attempt older than the attempt timeout is taken for lost and queued again.
    next_attempt_at = models.DateTimeField(null=True, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    delivered_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["status", "next_attempt_at"]), models.Index(fields=["endpoint", "status"])]
        verbose_name_plural = "webhook deliveries"


class WebhookAttempt(models.Model):
    delivery = models.ForeignKey(WebhookDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    attempted_at = models.DateTimeField(auto_now_add=True)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.CharField(max_length=500, blank=True)
    latency_ms = models.PositiveIntegerField()

    class Meta:
        ordering = ["attempted_at"]

    @property
    def succeeded(self) -> bool:
        """A 2xx delivers the event; anything else (no answer included) is retried."""
        return self.status_code is not None and 200 <= self.status_code < 300
