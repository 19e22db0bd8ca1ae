"""Stored chat completions (``store: true``), as ``client.chat.completions`` lists, retrieves,
updates and deletes them, and their request messages (``client.chat.completions.messages``).

A stored completion is recorded with its choices' responses, in their create's transaction
(models/chat_completions.py). It is found, by every operation alike, once it has been
answered: every choice's response completed (or incomplete: a budget spent), and not
expired by the tenant's retention, which deletes it with its first choice's response. One
whose client hung up, or that failed, is never found: its unanswered responses are purged as
unstored ones are (services/recovery.py), and any answered ones wait for retention.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.db.models.fields.json import KeyTransform

from responses_app import selectors
from responses_app.chat_completions.completion import completion_id, completion_object
from responses_app.chat_completions.requests import ChatCompletionRequest
from responses_app.lib.keyset import created_at_page
from responses_app.models import ANSWERED_STATUSES, Response, StoredChatCompletion, Tenant
from responses_app.tenancy.retention import expired_before
from responses_app.wire.errors import NotFound, or_not_found
from responses_app.wire.objects import list_object
from responses_app.wire.request_body import LOGPROBS_INCLUDE

JsonObject = dict[str, Any]


def record(tenant: Tenant, completion: ChatCompletionRequest, responses: list[Response]) -> None:
    """Keep a completion created with ``store: true``, in the transaction of its creates."""
    first = responses[0]
    StoredChatCompletion.objects.create(
        id=completion_id(first.pk), tenant=tenant, response=first, choices=[response.pk for response in responses],
        model=first.model, metadata=completion.create.params.metadata, messages=completion.messages,
        created_at=first.created_at)


def completions_page(tenant: Tenant, *, after: str | None, limit: int, order: str, model: str | None,
                     metadata: dict[str, str]) -> JsonObject:
    """One page of the tenant's stored completions by creation time, filtered by model and
    by metadata (every pair given must match)."""
    rows = _answered(tenant)
    if model is not None:
        rows = rows.filter(model=model)
    for index, (key, value) in enumerate(metadata.items()):
        # The key as a value, never as part of a lookup (a key may hold "__").
        rows = rows.alias(**{f"metadata_{index}": KeyTransform(key, "metadata")}).filter(
            **{f"metadata_{index}": value})
    # A row whose first choice is answered but another is not (n > 1) is left out after the
    # read: the page reads on until it holds limit + 1 answered ones, or the rows run out.
    found: list[JsonObject] = []
    cursor = after
    while len(found) <= limit:
        page, more = created_at_page(rows, after=cursor, limit=limit + 1 - len(found), order=order,
                                     cursors=_answered(tenant), missing=_no_cursor)
        found += [completion for row in page if (completion := completion_of(row)) is not None]
        if not more:
            break
        cursor = page[-1].pk
    return list_object(found[:limit], len(found) > limit)


def get_completion(tenant: Tenant, completion_id: str) -> JsonObject:
    row = _answered(tenant).filter(pk=completion_id).first()
    return or_not_found(completion_of(row) if row is not None else None,
                        f"Chat completion with id '{completion_id}' not found.", "completion_id")


def update_metadata(tenant: Tenant, completion_id: str, metadata: dict[str, str]) -> JsonObject:
    """Metadata is the one thing of a stored completion that changes (as at OpenAI)."""
    row = _stored(tenant, completion_id)
    StoredChatCompletion.objects.filter(pk=row.pk).update(metadata=metadata)
    row.metadata = metadata
    completion = completion_of(row)
    assert completion is not None  # _stored found every choice answered
    return completion


def delete_completion(tenant: Tenant, completion_id: str) -> None:
    """The completion and its choices' responses (the row goes with its first choice's)."""
    row = _stored(tenant, completion_id)
    Response.objects.filter(tenant=tenant, pk__in=row.choices).delete()


def messages_page(tenant: Tenant, completion_id: str, *, after: str | None, limit: int, order: str) -> JsonObject:
    """The request's messages, each as the SDK's ChatCompletionStoreMessage: an ``id`` of
    its own (the completion's and its position), its text as ``content`` and, where it was
    sent as parts, the parts as ``content_parts``."""
    row = _stored(tenant, completion_id)
    messages = [_store_message(row.pk, index, message) for index, message in enumerate(row.messages)]
    if order == "desc":
        messages.reverse()
    if after is not None:
        ids = [message["id"] for message in messages]
        if after not in ids:
            raise NotFound(f"No message found with id '{after}' in this chat completion.", param="after")
        messages = messages[ids.index(after) + 1:]
    return list_object(messages[:limit], len(messages) > limit)


def _answered(tenant: Tenant) -> QuerySet[StoredChatCompletion]:
    rows = StoredChatCompletion.objects.filter(tenant=tenant, response__status__in=ANSWERED_STATUSES)
    cutoff = expired_before(tenant)
    return rows if cutoff is None else rows.exclude(response__completed_at__lt=cutoff)


def _stored(tenant: Tenant, completion_id: str) -> StoredChatCompletion:
    row = _answered(tenant).filter(pk=completion_id).first()
    answered = row is not None and Response.objects.filter(
        pk__in=row.choices, status__in=ANSWERED_STATUSES).count() == len(row.choices)
    return or_not_found(row if answered else None, f"Chat completion with id '{completion_id}' not found.",
                        "completion_id")


def _no_cursor(cursor: str, param: str) -> NotFound:
    return NotFound(f"No chat completion found with id '{cursor}'.", param=param)


def completion_of(row: StoredChatCompletion) -> JsonObject | None:
    """The completion of the row's choices; None while one is not answered (or is gone)."""
    responses = Response.objects.in_bulk(row.choices)
    if len(responses) != len(row.choices) or any(response.status not in ANSWERED_STATUSES
                                                 for response in responses.values()):
        return None
    first = responses[row.choices[0]]
    rendered = [selectors.render_response(responses[pk]) for pk in row.choices]
    completion = completion_object(rendered, logprobs=LOGPROBS_INCLUDE in first.params.include)
    return {**completion, "metadata": row.metadata}


def _store_message(completion: str, index: int, message: JsonObject) -> JsonObject:
    content = message.get("content")
    parts = content if isinstance(content, list) else None
    text = "".join(part.get("text") or "" for part in parts) if parts is not None else content
    return {**message, "id": f"{completion}-{index}", "content": text, "content_parts": parts}
