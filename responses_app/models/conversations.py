"""Conversations: a tenant's server-side threads of items (``client.conversations``).

A response created with ``conversation=`` reads the conversation's items as the history
of its prompt and, when it ends, appends its input and output items (conversations/turns.py).
One response at a time works on a conversation: ``active_response`` is set by a
compare-and-set when it is created and cleared in its terminal transaction.
"""

from __future__ import annotations

from django.db import models

from responses_app.lib.ids import new_id
from responses_app.models.responses import Response, Tenant


def new_conversation_id() -> str:
    return new_id("conv")


class Conversation(models.Model):
    id = models.CharField(primary_key=True, max_length=64, default=new_conversation_id, editable=False)
    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="conversations")
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Bumped by every write of the conversation's items: that UPDATE is also the lock that
    # orders concurrent writers, on PostgreSQL (row lock) and SQLite (the write lock).
    updated_at = models.DateTimeField(auto_now=True)
    active_response = models.ForeignKey(Response, null=True, blank=True, on_delete=models.SET_NULL,
                                        related_name="+", help_text="The response working on it now, if any.")

    class Meta:
        indexes = [models.Index(fields=["tenant", "-created_at"])]

    def __str__(self) -> str:
        return self.id


class ConversationItem(models.Model):
    """One item of a conversation, exactly as the Conversations API returns it."""

    conversation = models.ForeignKey(Conversation, on_delete=models.CASCADE, related_name="items")
    position = models.PositiveIntegerField()
    item_id = models.CharField(max_length=64)
    item_type = models.CharField(max_length=40)
    data = models.JSONField()
    # The response whose input or output it was; null for an item added with items.create.
    response = models.ForeignKey(Response, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "position"], name="conversation_item_position_unique"),
            models.UniqueConstraint(fields=["conversation", "item_id"], name="conversation_item_id_unique"),
        ]
        ordering = ["position"]
