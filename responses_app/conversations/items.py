"""A conversation's items in the database, appended in order (selectors.conversation_items
reads them).

Below the API (store.py) and the response's turn (turns.py) alike: it imports only models.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Max

from responses_app.models import Conversation, ConversationItem

LOCKED = "conversation_locked"


def append_items(conversation: Conversation, items: list[dict[str, Any]], response_id: str | None = None,
                 ) -> list[ConversationItem]:
    """Append ``items`` after the conversation's last item; the caller holds its lock
    (store._locked, or the terminal transaction of its active response) or made it."""
    last = ConversationItem.objects.filter(conversation=conversation).aggregate(last=Max("position"))["last"]
    start = -1 if last is None else last
    return ConversationItem.objects.bulk_create(
        ConversationItem(conversation=conversation, position=start + 1 + offset, item_id=item["id"],
                         item_type=item["type"], data=item, response_id=response_id)
        for offset, item in enumerate(items))
