"""A response's turn on a conversation: the conversation is its own for as long as it is
active, and its input and output items join the conversation when it ends.

Two responses on one conversation never run at once: the second create is a 409
``conversation_locked`` (the client retries once the first has ended), because the
second one's prompt must contain the first one's output, which does not exist yet.
"""

from __future__ import annotations

from typing import Any

from responses_app import selectors
from responses_app.conversations.items import LOCKED, append_items
from responses_app.models import Conversation, ConversationItem, Response, ResponseStatus, Tenant
from responses_app.wire.errors import Conflict, NotFound

# Ended so that the turn happened: its items join the conversation. A failed or cancelled
# response leaves the conversation as it was, so the client can simply try again.
APPENDED_STATUSES = (ResponseStatus.COMPLETED, ResponseStatus.INCOMPLETE)


def conversation_history(tenant: Tenant, conversation_id: str) -> list[dict[str, Any]]:
    """The items a create on the conversation builds its prompt from (404 if not the tenant's)."""
    if not Conversation.objects.filter(tenant=tenant, pk=conversation_id).exists():
        raise _not_found(conversation_id)
    return selectors.conversation_items(conversation_id)


def claim(tenant: Tenant, conversation_id: str, response: Response) -> None:
    """Make ``response`` the conversation's active response, inside its create's
    transaction (compare-and-set: one of two concurrent creates wins, the other gets 409)."""
    claimed = Conversation.objects.filter(tenant=tenant, pk=conversation_id, active_response__isnull=True).update(
        active_response=response)
    if claimed:
        return
    row = Conversation.objects.filter(tenant=tenant, pk=conversation_id).values("active_response_id").first()
    if row is None:  # deleted since the create read it
        raise _not_found(conversation_id)
    raise Conflict(f"Another response ('{row['active_response_id']}') is working on conversation "
                   f"'{conversation_id}'; retry once it has ended.", param="conversation", code=LOCKED)


def response_ended(response: Response) -> None:
    """Inside the terminal transaction of ``response``: append its input and output items
    to its conversation (in that order, each item once) and release the conversation."""
    if not response.conversation_id:
        return
    # The UPDATE first: it takes the conversation's lock before its items are read.
    released = Conversation.objects.filter(pk=response.conversation_id, active_response_id=response.pk).update(
        active_response=None)
    if not released or response.status not in APPENDED_STATUSES:
        return
    conversation = Conversation.objects.get(pk=response.conversation_id)
    items = selectors.input_items(response) + selectors.output_items(response)
    # An item the client passed back as input is already there: it stays where it is.
    known = set(ConversationItem.objects.filter(conversation=conversation, item_id__in=[i["id"] for i in items])
                .values_list("item_id", flat=True))
    new = []
    for item in items:
        if item["id"] not in known:
            known.add(item["id"])
            new.append(item)
    append_items(conversation, new, response_id=response.pk)


def _not_found(conversation_id: str) -> NotFound:
    return NotFound(f"Conversation with id '{conversation_id}' not found.", param="conversation",
                    code="conversation_not_found")
