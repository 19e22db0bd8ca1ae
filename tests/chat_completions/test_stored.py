"""Stored chat completions (``store: true``) through the openai SDK, in process with the worker
inline: list (filters, order, pages), retrieve, update, delete and the request messages, each
scoped to its tenant; what is never found (unstored, failed); the purges; the console."""

from __future__ import annotations

from datetime import timedelta

import openai
import pytest
from django.contrib.admin.utils import quote
from django.urls import reverse
from django.utils import timezone

from tests.helpers import reasoning_and_answer
from tests.operators import make_operator

pytestmark = pytest.mark.core

HELLO = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}]
NOT_HARMONY = "<|channel|>final<|message|>Partly<|end|><|start|><|start|>"


def stored(client: openai.OpenAI, text: str = "Hello there", model: str = "echo", **body):
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": text}], store=True,
                                          **body)


def test_a_stored_completion_is_retrieved_as_it_was_answered_with_its_metadata(alice: openai.OpenAI):
    created = alice.chat.completions.create(model="echo", messages=HELLO, store=True, metadata={"app": "docs"})
    retrieved = alice.chat.completions.retrieve(created.id)
    assert retrieved.to_dict() == {**created.to_dict(), "metadata": {"app": "docs"}}
    # Its choices are unstored responses: the Responses API never shows them.
    with pytest.raises(openai.NotFoundError):
        alice.responses.retrieve("resp_" + created.id.removeprefix("chatcmpl-"))


def test_the_list_filters_by_model_and_metadata_and_pages_oldest_first(carol: openai.OpenAI):
    first = stored(carol, "one", metadata={"team": "a", "run": "1"})
    second = stored(carol, "two", metadata={"team": "b"})
    third = stored(carol, "three", metadata={"team": "a", "run": "2"})
    carol.chat.completions.create(model="echo", messages=[{"role": "user", "content": "not stored"}])
    other_model = stored(carol, "four", model="echo-short", metadata={"a__contains": "'\"x"})

    assert [c.id for c in carol.chat.completions.list()] == [first.id, second.id, third.id, other_model.id]
    assert [c.id for c in carol.chat.completions.list(order="desc")] == [other_model.id, third.id, second.id, first.id]
    page = carol.chat.completions.list(limit=2)
    assert [c.id for c in page.data] == [first.id, second.id] and page.has_more
    assert [c.id for c in carol.chat.completions.list(after=second.id)] == [third.id, other_model.id]
    assert [c.id for c in carol.chat.completions.list(metadata={"team": "a"})] == [first.id, third.id]
    assert [c.id for c in carol.chat.completions.list(metadata={"team": "a", "run": "2"})] == [third.id]
    assert [c.id for c in carol.chat.completions.list(model="echo")] == [first.id, second.id, third.id]
    # A key is a value, never part of a lookup.
    assert [c.id for c in carol.chat.completions.list(metadata={"a__contains": "'\"x"})] == [other_model.id]
    assert list(carol.chat.completions.list(metadata={"a": "'\"x"})) == []
    assert [c.id for c in carol.chat.completions.list(model="echo-short")] == [other_model.id]
    listed = carol.chat.completions.list(limit=1).data[0]
    assert listed.to_dict() == carol.chat.completions.retrieve(first.id).to_dict()


def test_the_request_messages_are_listed_with_ids_of_their_own(alice: openai.OpenAI):
    messages = [{"role": "developer", "content": "Be brief."},
                {"role": "user", "content": [{"type": "text", "text": "Hello "}, {"type": "text", "text": "there"}]}]
    created = alice.chat.completions.create(model="echo", messages=messages, store=True)
    listed = alice.chat.completions.messages.list(created.id)
    assert [(m.id, m.role, m.content) for m in listed] == [
        (f"{created.id}-0", "developer", "Be brief."), (f"{created.id}-1", "user", "Hello there")]
    assert listed.data[0].content_parts is None
    assert [part.text for part in listed.data[1].content_parts] == ["Hello ", "there"]
    last = alice.chat.completions.messages.list(created.id, order="desc", limit=1)
    assert [m.id for m in last.data] == [f"{created.id}-1"] and last.has_more
    assert [m.id for m in alice.chat.completions.messages.list(created.id, after=f"{created.id}-0")] == [
        f"{created.id}-1"]


def test_update_changes_the_metadata_and_delete_removes_the_completion_and_its_responses(
        alice: openai.OpenAI, db_access):
    from responses_app.models import Response

    created = stored(alice, metadata={"v": "1"})
    assert alice.chat.completions.update(created.id, metadata={"v": "2", "k": "x"}).metadata == {"v": "2", "k": "x"}
    assert alice.chat.completions.retrieve(created.id).metadata == {"v": "2", "k": "x"}
    with pytest.raises(openai.BadRequestError) as refused:
        alice.chat.completions.update(created.id, metadata={"v": 3})
    assert refused.value.body["param"] == "metadata.v"
    with pytest.raises(openai.BadRequestError) as refused:
        alice.post(f"/chat/completions/{created.id}", body={}, cast_to=dict)
    assert refused.value.body["param"] == "metadata"
    assert alice.chat.completions.update(created.id, metadata=None).metadata == {}  # null clears it

    deleted = alice.chat.completions.delete(created.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (created.id, "chat.completion.deleted", True)
    assert not Response.objects.filter(pk="resp_" + created.id.removeprefix("chatcmpl-")).exists()
    for call in (alice.chat.completions.retrieve, alice.chat.completions.delete, alice.chat.completions.messages.list):
        with pytest.raises(openai.NotFoundError):
            call(created.id)


def test_another_tenants_stored_completion_is_never_found(alice: openai.OpenAI, bob: openai.OpenAI):
    created = stored(alice)
    for call in (lambda: bob.chat.completions.retrieve(created.id),
                 lambda: bob.chat.completions.update(created.id, metadata={"k": "v"}),
                 lambda: bob.chat.completions.delete(created.id),
                 lambda: bob.chat.completions.messages.list(created.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert created.id not in {c.id for c in bob.chat.completions.list(limit=100)}
    assert alice.chat.completions.retrieve(created.id).id == created.id


def test_an_unstored_or_failed_completion_is_never_found(carol: openai.OpenAI):
    unstored = carol.chat.completions.create(model="echo", messages=HELLO)
    with pytest.raises(openai.InternalServerError):
        stored(carol, NOT_HARMONY)
    with pytest.raises(openai.NotFoundError):
        carol.chat.completions.retrieve(unstored.id)
    assert list(carol.chat.completions.list()) == []


def test_n_stored_choices_are_retrieved_together(alice: openai.OpenAI):
    created = stored(alice, reasoning_and_answer("Hm.", "Paris."), n=2)
    retrieved = alice.chat.completions.retrieve(created.id)
    assert [(c.index, c.message.content) for c in retrieved.choices] == [(0, "Paris."), (1, "Paris.")]


def test_the_unstored_purge_keeps_an_answered_stored_completion_and_retention_deletes_it(
        carol: openai.OpenAI, carol_tenant: str, settings, db_access):
    from responses_app.chat_completions.stored import get_completion
    from responses_app.models import Response, StoredChatCompletion, Tenant
    from responses_app.services.recovery import purge_unstored_responses
    from responses_app.tenancy.retention import purge_expired
    from responses_app.wire.errors import NotFound

    settings.UNSTORED_RETENTION_S = 0
    kept = stored(carol)
    with pytest.raises(openai.InternalServerError):
        stored(carol, NOT_HARMONY)  # its row goes with its failed response
    Response.objects.filter(tenant__name=carol_tenant).update(completed_at=timezone.now() - timedelta(seconds=5))
    purge_unstored_responses()
    assert [row.pk for row in StoredChatCompletion.objects.filter(tenant__name=carol_tenant)] == [kept.id]
    assert carol.chat.completions.retrieve(kept.id).id == kept.id

    Tenant.objects.filter(name=carol_tenant).update(response_retention_days=1)
    Response.objects.filter(tenant__name=carol_tenant).update(completed_at=timezone.now() - timedelta(days=2))
    with pytest.raises(NotFound):  # expired: not found before the purge gets to it
        get_completion(Tenant.objects.get(name=carol_tenant), kept.id)
    purge_expired()
    assert not StoredChatCompletion.objects.filter(tenant__name=carol_tenant).exists()


@pytest.fixture
def committed_operator_client(client, db_access):
    """An operator committed beside the API's own rows (a test transaction would hold
    SQLite's write lock against the API's threads)."""
    operator = make_operator("chat-operator")
    client.force_login(operator)
    yield client
    operator.delete()


def test_the_console_lists_stored_completions_and_shows_messages_answer_and_responses(
        alice: openai.OpenAI, committed_operator_client):
    operator_client = committed_operator_client
    created = alice.chat.completions.create(model="echo", messages=HELLO, store=True, metadata={"app": "console"})
    listing = operator_client.get("/admin/responses_app/storedchatcompletion/").content.decode()
    assert created.id in listing and "completed" in listing
    page = operator_client.get(f"/admin/responses_app/storedchatcompletion/{created.id}/change/").content.decode()
    response_id = "resp_" + created.id.removeprefix("chatcmpl-")
    assert "Be brief." in page and created.choices[0].message.content in page
    assert reverse("admin:responses_app_response_change", args=[quote(response_id)]) in page
