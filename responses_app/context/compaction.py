"""Compaction (``client.responses.compact``): a long context becomes its user messages,
kept verbatim, and one ``compaction`` item holding the model's own summary of the rest.

The summary travels in the item's ``encrypted_content``: signed with Django's signing
(DJANGO_SECRET_KEY, with SECRET_KEY_FALLBACKS during a rotation), not encrypted, since
gpt-oss shows its reasoning anyway. A compaction item passed back as input must carry a
signature this server made; its prompt is a developer message with the summary, where
the item stands (context/history.prompt_request).
"""

from __future__ import annotations

from typing import Any

from django.core import signing

from responses_app.engines.base import SUMMARY_REQUEST
from responses_app.lib.ids import new_id
from responses_app.models import Response, ResponseStatus
from responses_app.response_object import compacted_object
from responses_app.selectors import output_items
from responses_app.wire.errors import CompactionFailed

SALT = "responses.compaction"
SUMMARY_PREFIX = "Summary of the earlier conversation, written by you when it was compacted:\n"


class InvalidCompaction(ValueError):
    """``encrypted_content`` that this server did not sign (or that was altered)."""


def compaction_item(summary: str) -> dict[str, Any]:
    return {"id": new_id("cmp"), "type": "compaction", "encrypted_content": sealed(summary)}


def sealed(summary: str) -> str:
    """A summary as a compaction item's ``encrypted_content``."""
    return signing.dumps({"summary": summary}, salt=SALT, compress=True)


def summary_of(item: dict[str, Any]) -> str:
    try:
        return signing.loads(item["encrypted_content"], salt=SALT)["summary"]
    except (signing.BadSignature, KeyError, TypeError) as error:
        raise InvalidCompaction("This compaction item was not made by this server, or was altered.") from error


def summary_request_item() -> dict[str, Any]:
    """The user message that ends the summarization turn."""
    return {"id": new_id("msg"), "type": "message", "role": "user", "status": "completed",
            "content": [{"type": "input_text", "text": SUMMARY_REQUEST}]}


def kept_verbatim(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What a compaction keeps as it was: the user's messages, in order."""
    return [item for item in items if item.get("type", "message") == "message" and item.get("role") == "user"]


def compacted(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A context as the model reads it: before its last compaction item, only the user's
    messages (the item summarizes the rest). A compaction item that a client sends back
    (POST /responses/compact) or that a response made itself (context_management) counts
    the same; one whose summary never came (its response failed) stands for nothing."""
    items = [item for item in items if item.get("type") != "compaction" or item.get("encrypted_content")]
    last = max((index for index, item in enumerate(items) if item.get("type") == "compaction"), default=None)
    return items if last is None else kept_verbatim(items[:last]) + items[last:]


def as_prompt_item(item: dict[str, Any]) -> dict[str, Any]:
    """The item the prompt renders in place of a compaction item: its summary, as a
    developer message (harmony's mid-conversation instructions)."""
    if item.get("type") != "compaction":
        return item
    return {"type": "message", "role": "developer", "id": item["id"],
            "content": [{"type": "input_text", "text": SUMMARY_PREFIX + summary_of(item)}]}


def compacted_response(turn: Response, kept: list[dict[str, Any]]) -> dict[str, Any]:
    """The response.compaction object of a finished summarization turn (services/create.start_compaction):
    the kept items, then a compaction item with the turn's final answer as its summary."""
    answers = [item for item in output_items(turn) if item.get("type") == "message"]
    summary = "".join(part.get("text", "") for item in answers for part in item.get("content", []))
    if turn.status not in (ResponseStatus.COMPLETED, ResponseStatus.INCOMPLETE) or not summary.strip():
        why = f": {turn.error['message']}" if turn.error else ""
        raise CompactionFailed(f"The model did not write a summary (its turn ended {turn.status}{why}).")
    return compacted_object(turn, [*kept, compaction_item(summary)])
