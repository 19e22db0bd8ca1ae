"""A tenant's conversations and their items, as ``client.conversations`` and
``client.conversations.items`` manage them.

Bodies are parsed by conversations/requests.py (items like a create's ``input``); items
are kept in order by position. While a response works on a conversation (``active_response``), its
items cannot change: that response's prompt is built from them, and its own items are
appended when it ends (turns.py); adding or deleting items then is a 409
``conversation_locked``, as is deleting the conversation.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from responses_app.conversations.items import LOCKED, append_items
from responses_app.files.inputs import read_input_files
from responses_app.models import Conversation, ConversationItem, Tenant
from responses_app.selectors import position_page
from responses_app.wire.errors import Conflict, InvalidRequest, NotFound, or_not_found
from responses_app.wire.objects import conversation_item_object, list_object


def conversation_object(conversation: Conversation) -> dict[str, Any]:
    return {"id": conversation.pk, "object": "conversation", "created_at": int(conversation.created_at.timestamp()),
            "metadata": conversation.metadata}


def get_conversation(tenant: Tenant, conversation_id: str) -> Conversation:
    return or_not_found(Conversation.objects.filter(tenant=tenant, pk=conversation_id).first(),
                        f"Conversation with id '{conversation_id}' not found.", "conversation_id")


def create_conversation(tenant: Tenant, metadata: dict[str, str], items: list[dict[str, Any]]) -> Conversation:
    """A conversation with its metadata and initial items, in one transaction."""
    items = read_input_files(tenant, items, "items")
    with transaction.atomic():
        conversation = Conversation.objects.create(tenant=tenant, metadata=metadata)
        append_items(conversation, items)
    return conversation


def update_conversation(tenant: Tenant, conversation_id: str, metadata: dict[str, str]) -> Conversation:
    """Replace the metadata. Allowed while a response works on the conversation: metadata
    is not part of any prompt."""
    conversation = get_conversation(tenant, conversation_id)
    Conversation.objects.filter(pk=conversation.pk).update(metadata=metadata, updated_at=timezone.now())
    conversation.metadata = metadata
    return conversation


def delete_conversation(tenant: Tenant, conversation_id: str) -> None:
    """Delete it with its items; the responses that worked on it stay (they name its id)."""
    with transaction.atomic():
        conversation = _locked(tenant, conversation_id)
        conversation.delete()


def add_items(tenant: Tenant, conversation_id: str, items: list[dict[str, Any]]) -> list[ConversationItem]:
    """Append items after every item already there (an id already in it is a 400)."""
    items = read_input_files(tenant, items, "items")
    with transaction.atomic():
        conversation = _locked(tenant, conversation_id)
        known = set(ConversationItem.objects.filter(conversation=conversation, item_id__in=[i["id"] for i in items])
                    .values_list("item_id", flat=True))
        for index, item in enumerate(items):
            if item["id"] in known:
                raise InvalidRequest(f"An item with id '{item['id']}' is already in this conversation.",
                                     param=f"items[{index}].id", code="duplicate_item")
        return append_items(conversation, items)


def items_page(tenant: Tenant, conversation_id: str, *, after: str | None, limit: int, order: str,
               include: list[str]) -> dict[str, Any]:
    """One page of the conversation's items (newest first unless ``order`` is asc)."""
    conversation = get_conversation(tenant, conversation_id)
    page, more = position_page(ConversationItem.objects.filter(conversation=conversation), after=after, limit=limit,
                               order=order, missing=f"No item with id '{after}' in this conversation.")
    return items_list(page, include, has_more=more)


def items_list(items: list[ConversationItem], include: list[str], *, has_more: bool = False) -> dict[str, Any]:
    return list_object([conversation_item_object(item.data, include) for item in items], has_more)


def get_item(tenant: Tenant, conversation_id: str, item_id: str) -> ConversationItem:
    conversation = get_conversation(tenant, conversation_id)
    return or_not_found(ConversationItem.objects.filter(conversation=conversation, item_id=item_id).first(),
                        f"Item with id '{item_id}' not found in conversation '{conversation_id}'.", "item_id")


def delete_item(tenant: Tenant, conversation_id: str, item_id: str) -> Conversation:
    """Delete one item; the conversation is returned, as the SDK types it."""
    with transaction.atomic():
        conversation = _locked(tenant, conversation_id)
        deleted, _ = ConversationItem.objects.filter(conversation=conversation, item_id=item_id).delete()
        if not deleted:
            raise NotFound(f"Item with id '{item_id}' not found in conversation '{conversation_id}'.",
                           param="item_id")
    return conversation


def _locked(tenant: Tenant, conversation_id: str) -> Conversation:
    """The conversation, locked for a write of its items (inside a transaction); 409 while
    a response works on it."""
    if not Conversation.objects.filter(tenant=tenant, pk=conversation_id).update(updated_at=timezone.now()):
        raise NotFound(f"Conversation with id '{conversation_id}' not found.", param="conversation_id")
    conversation = Conversation.objects.get(pk=conversation_id)
    if conversation.active_response_id:
        raise Conflict(f"Response '{conversation.active_response_id}' is working on this conversation; its items "
                       "can change once it has ended.", param="conversation_id", code=LOCKED)
    return conversation
