"""The Files API through the openai SDK (client.files), against the API in this process:
upload, list, retrieve, download, delete, expiry, the caps, and isolation between tenants."""

from __future__ import annotations

import time

import openai
import pytest
from django.utils import timezone

from responses_app.files.store import purge_expired
from tests.conftest import http_client
from tests.helpers import wait_until

pytestmark = pytest.mark.core

BATCH_LINES = b"".join(
    b'{"custom_id": "r%d", "method": "POST", "url": "/v1/responses", "body": {"model": "echo", "input": "Hi"}}\n' % n
    for n in range(3))


def test_a_file_is_uploaded_listed_retrieved_downloaded_and_deleted(alice: openai.OpenAI):
    uploaded = alice.files.create(file=("notes.md", b"# Notes\n\nHello.\n", "text/markdown"), purpose="user_data")
    assert (uploaded.object, uploaded.filename, uploaded.purpose, uploaded.bytes, uploaded.status) == (
        "file", "notes.md", "user_data", 16, "processed")
    assert uploaded.id.startswith("file-") and uploaded.expires_at is None
    assert abs(uploaded.created_at - time.time()) < 60
    assert alice.files.retrieve(uploaded.id) == uploaded
    assert alice.files.content(uploaded.id).read() == b"# Notes\n\nHello.\n"
    assert uploaded.id in [f.id for f in alice.files.list()]

    deleted = alice.files.delete(uploaded.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (uploaded.id, "file", True)
    for gone in (lambda: alice.files.retrieve(uploaded.id), lambda: alice.files.content(uploaded.id),
                 lambda: alice.files.delete(uploaded.id)):
        with pytest.raises(openai.NotFoundError):
            gone()


def test_the_list_pages_by_purpose_in_either_order(alice: openai.OpenAI, carol: openai.OpenAI):
    ids = [carol.files.create(file=(f"{n}.txt", b"x"), purpose="assistants").id for n in range(5)]
    batch = carol.files.create(file=("in.jsonl", BATCH_LINES), purpose="batch")
    assert [f.id for f in carol.files.list(purpose="assistants")] == ids[::-1]
    assert [f.id for f in carol.files.list(purpose="assistants", order="asc", limit=2)] == ids  # every page
    page = carol.files.list(purpose="assistants", order="asc", limit=2, after=ids[1])
    assert [f.id for f in page.data] == ids[2:4] and page.has_more
    assert [f.id for f in carol.files.list(purpose="batch")] == [batch.id]
    assert len(carol.files.list().data) == 6
    with pytest.raises(openai.BadRequestError) as unknown:
        carol.files.list(after="file-nope")
    assert unknown.value.param == "after"


def test_a_batch_file_expires_in_30_days_unless_told_and_an_expired_file_is_gone(alice: openai.OpenAI, stack,
                                                                               db_access):
    from responses_app.models import StoredFile

    batch = alice.files.create(file=("in.jsonl", BATCH_LINES), purpose="batch")
    assert batch.expires_at - batch.created_at == 30 * 86400
    short = alice.files.create(file=("in.jsonl", BATCH_LINES), purpose="user_data",
                               expires_after={"anchor": "created_at", "seconds": 3600})
    assert short.expires_at - short.created_at == 3600
    row = StoredFile.objects.get(pk=short.id)
    StoredFile.objects.filter(pk=short.id).update(expires_at=timezone.now())
    with pytest.raises(openai.NotFoundError):  # gone for the client at once
        alice.files.retrieve(short.id)
    # The worker's live stack shares this database and its beat purges expired files every
    # second, so it may be first: what counts is that the row and its bytes are gone.
    purge_expired()
    assert not StoredFile.objects.filter(pk=short.id).exists()
    from responses_app.files.store import file_storage

    # The beat's purge deletes the bytes once its transaction commits, a moment after the row.
    wait_until(lambda: not file_storage().exists(row.storage_name), timeout=5)
    assert alice.files.retrieve(batch.id).id == batch.id


@pytest.mark.parametrize(("fields", "param"), [
    ({"purpose": "fine-tune-results"}, "purpose"),
    ({"purpose": "batch_output"}, "purpose"),
    ({"purpose": "user_data", "expires_after": {"anchor": "last_active_at", "seconds": 3600}}, "expires_after.anchor"),
    ({"purpose": "user_data", "expires_after": {"anchor": "created_at", "seconds": 60}}, "expires_after.seconds"),
    ({"purpose": "user_data", "expires_after": {"anchor": "created_at", "seconds": "soon"}}, "expires_after.seconds"),
])
def test_a_bad_upload_is_a_400_naming_the_parameter_and_stores_nothing(carol: openai.OpenAI, carol_tenant: str,
                                                                      fields, param):
    from responses_app.models import StoredFile

    with pytest.raises(openai.BadRequestError) as refused:
        carol.files.create(file=("a.txt", b"a"), **fields)
    assert refused.value.param == param
    assert not StoredFile.objects.filter(tenant__name=carol_tenant).exists()


@pytest.mark.parametrize("purpose", ["assistants", "user_data", "batch"])
def test_an_empty_upload_is_a_400_as_at_openai_and_stores_nothing(carol: openai.OpenAI, carol_tenant: str,
                                                                   purpose: str):
    from responses_app.models import StoredFile

    with pytest.raises(openai.BadRequestError) as refused:
        carol.files.create(file=("empty.txt", b""), purpose=purpose)
    assert refused.value.body == {"message": "File is empty.", "type": "invalid_request_error", "param": "file",
                                  "code": "empty_file"}
    assert not StoredFile.objects.filter(tenant__name=carol_tenant).exists()


def test_the_form_needs_a_file_and_a_purpose_and_nothing_else(stack, alice_key):
    with http_client(stack, alice_key) as client:
        no_purpose = client.post("/files", files={"file": ("a.txt", b"a")})
        no_file = client.post("/files", data={"purpose": "user_data"}, files={"other": ("a.txt", b"a")})
        extra = client.post("/files", data={"purpose": "user_data", "name": "x"}, files={"file": ("a.txt", b"a")})
        json = client.post("/files", json={"purpose": "user_data"})
    assert (no_purpose.status_code, no_purpose.json()["error"]["param"]) == (400, "purpose")
    assert (no_file.status_code, no_file.json()["error"]["param"]) == (400, "file")
    assert (extra.status_code, extra.json()["error"]["param"]) == (400, "name")
    assert (json.status_code, json.json()["error"]["param"]) == (400, "file")


def test_uploads_over_the_caps_are_refused(alice: openai.OpenAI, settings):
    settings.FILE_MAX_BYTES, settings.BATCH_FILE_MAX_LINES = 100, 2
    alice.files.create(file=("ok.txt", b"x" * 100), purpose="user_data")
    settings.BATCH_FILE_MAX_BYTES = 1000
    for file, purpose in ((b"x" * 101, "user_data"), (b"x" * 1001, "batch"), (BATCH_LINES, "batch"),
                          (BATCH_LINES.rstrip(b"\n"), "batch")):  # 3 lines, the last without its newline
        with pytest.raises(openai.BadRequestError) as refused:
            alice.files.create(file=("big", file), purpose=purpose)
        assert (refused.value.param, refused.value.code) == ("file", "file_too_large")


def test_another_tenants_files_are_not_found(alice: openai.OpenAI, bob: openai.OpenAI):
    mine = alice.files.create(file=("secret.txt", b"secret"), purpose="user_data")
    for call in (lambda: bob.files.retrieve(mine.id), lambda: bob.files.content(mine.id),
                 lambda: bob.files.delete(mine.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert mine.id not in [f.id for f in bob.files.list()]
    assert alice.files.content(mine.id).read() == b"secret"
