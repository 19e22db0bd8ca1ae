"""Steering input sent over the Responses WebSocket: queued user input for a running
response, owned by the server from its acceptance until a successor commits it."""

from __future__ import annotations

from django.db import models

from responses_app.lib.ids import new_id
from responses_app.models.responses import Response, Tenant


class SteerState(models.TextChoices):
    QUEUED = "queued"  # accepted, waiting for the response's next safe boundary or its end
    COMMITTED = "committed"  # the input of ``successor``
    PENDING = "pending"  # the response waits for client tool output; the explicit create takes it
    FAILED = "failed"  # returned to the client with ``error_code``


def new_steer_id() -> str:
    return new_id("steer")


class ResponseSteer(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_steer_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="steers")
    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="steers")
    # As sent (echoed by response.steer.failed) and as input items (what a successor gets).
    input = models.JSONField()
    input_items = models.JSONField()
    state = models.CharField(max_length=16, choices=SteerState.choices, default=SteerState.QUEUED)
    successor = models.ForeignKey(Response, null=True, blank=True, on_delete=models.SET_NULL,
                                  related_name="committed_steers")
    error_code = models.CharField(max_length=64, blank=True)
    error_message = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["response", "state"])]
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return self.id
