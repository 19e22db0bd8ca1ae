"""Stored chat completions: a completion created with ``store: true`` (responses_app/chat_completions).

Its choices run as unstored responses, hidden from the Responses API like any other; the
row keeps the request's messages as sent and names the choices' responses, which are kept
from the unstored purge and, like stored responses, deleted by retention (the row with its
first choice's response)."""

from __future__ import annotations

from django.db import models
from django.utils import timezone

from responses_app.models.responses import Response, ResponseStatus, Tenant

# The statuses of a stored completion's choices once it is answered (found by the API).
ANSWERED_STATUSES = (ResponseStatus.COMPLETED, ResponseStatus.INCOMPLETE)


class StoredChatCompletion(models.Model):
    id = models.CharField(primary_key=True, max_length=64)  # chatcmpl-…, its first choice's response id
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="+")
    # Its first choice's response: retention deletes the row with it.
    response = models.OneToOneField(Response, on_delete=models.CASCADE, related_name="stored_chat_completion")
    choices = models.JSONField(default=list)  # every choice's response id, in order
    model = models.CharField(max_length=200)
    metadata = models.JSONField(default=dict, blank=True)
    messages = models.JSONField(default=list)  # the request's messages, as sent
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        indexes = [models.Index(fields=["tenant", "created_at", "id"], name="stored_chat_completion_page")]

    def __str__(self) -> str:
        return self.id
