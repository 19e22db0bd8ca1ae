"""Vector stores in the operator console, through Django's test client with real rows made
by the services (files uploaded, stores created, files attached and ingested): what the
store list, a store's page and the file list show, who may see them, and the re-ingest
action, which takes a file's chunks out and sends it to ingestion again without ever
indexing it twice."""

from __future__ import annotations

from datetime import timedelta
from unittest import mock

import pytest
from django.contrib import admin
from django.contrib.admin.models import CHANGE, LogEntry
from django.contrib.admin.utils import quote
from django.contrib.auth.models import Permission, User
from django.core.files.base import ContentFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from responses_app.files.store import create_file
from responses_app.models import (
    VectorStore,
    VectorStoreChunk,
    VectorStoreFile,
    VectorStoreFileStatus,
    VectorStoreTerm,
)
from responses_app.vector_stores import ingest
from responses_app.vector_stores.requests import parse_file_create, parse_vector_store_create
from responses_app.vector_stores.search import search
from responses_app.vector_stores.store import attach_file, create_vector_store
from responses_app.wire.search_options import Ranking
from tests.operators import make_viewer

pytestmark = [pytest.mark.django_db, pytest.mark.core]

STORES = "/admin/responses_app/vectorstore/"
FILES = "/admin/responses_app/vectorstorefile/"
LEAVE = "# Leave\n\nEvery employee has 27 days of paid annual leave. Unused leave carries over to March."
EXPENSES = "# Expenses\n\nTrain tickets are reimbursed in second class. Receipts go to the finance team."
BROKEN = {"code": "server_error",
          "message": "Ingestion stopped unexpectedly 3 times (VECTOR_STORE_INGEST_MAX_ATTEMPTS)."}


@pytest.fixture(autouse=True)
def files_in_tmp(settings, tmp_path) -> None:
    settings.STORAGES = {**settings.STORAGES, "files": {**settings.STORAGES["files"],
                                                         "OPTIONS": {"location": str(tmp_path / "files")}}}


@pytest.fixture
def ingest_at_once(monkeypatch) -> None:
    """Attaching a file ingests it as its transaction commits, as a worker would."""
    monkeypatch.setattr(ingest, "send_ingest_task", ingest.ingest)


def upload(tenant, name: str, text: str) -> str:
    return create_file(tenant, ContentFile(text.encode(), name=name), name, "assistants", None).id


@pytest.fixture
def handbook(tenant, ingest_at_once, django_capture_on_commit_callbacks) -> VectorStore:
    """A store with leave.md completed and expenses.md failed (as beat's sweep fails a file
    whose ingestion kept dying), both with attributes."""
    leave, expenses = upload(tenant, "leave.md", LEAVE), upload(tenant, "expenses.md", EXPENSES)
    with django_capture_on_commit_callbacks(execute=True):
        store = create_vector_store(tenant, parse_vector_store_create({"name": "handbook", "metadata": {"team": "hr"}}))
        attach_file(tenant, store.pk, parse_file_create({"file_id": leave, "attributes": {"topic": "leave"}}))
    with mock.patch.object(ingest, "send_ingest_task"), django_capture_on_commit_callbacks(execute=True):
        attach_file(tenant, store.pk, parse_file_create({"file_id": expenses, "attributes": {"topic": "money"}}))
    VectorStoreFile.objects.filter(file_id=expenses).update(status=VectorStoreFileStatus.FAILED, last_error=BROKEN,
                                                            ingest_attempts=3)
    return store


def store_file(store: VectorStore, filename: str) -> VectorStoreFile:
    return VectorStoreFile.objects.select_related("file").get(vector_store=store, file__filename=filename)


def hits(store: VectorStore, query: str) -> list[tuple[str, str]]:
    store.refresh_from_db()
    # Words only: a store's every chunk is near any query by meaning.
    return [(hit.vector_store_file.file.filename, hit.text)
            for hit in search([store], [query], None, 10, Ranking(embedding_weight=0))]


def reingest(client, *files: VectorStoreFile):
    return client.post(FILES, {"action": "reingest_files", "_selected_action": [f.pk for f in files]})


# --- the store list ------------------------------------------------------------------------------


def test_the_store_list_shows_counts_usage_and_the_status_clients_see(operator_client, handbook, tenant):
    leave = store_file(handbook, "leave.md")
    html = operator_client.get(STORES).content.decode()
    assert handbook.pk in html and "handbook" in html and tenant.name in html
    assert "2 (1 completed, 0 in progress, 1 failed)" in html
    assert f"<td class=\"field-usage_bytes\">{leave.usage_bytes}</td>" in html and leave.usage_bytes > 0
    assert '<span class="vector-store-status" data-status="completed">completed</span>' in html


def test_a_store_with_a_file_in_progress_is_in_progress_and_one_past_its_expiry_is_expired(operator_client, tenant):
    busy = create_vector_store(tenant, parse_vector_store_create({"name": "busy"}))
    with mock.patch.object(ingest, "send_ingest_task"):
        attach_file(tenant, busy.pk, parse_file_create({"file_id": upload(tenant, "a.md", LEAVE)}))
    old = create_vector_store(tenant, parse_vector_store_create({"name": "old", "expires_after": {
        "anchor": "last_active_at", "days": 1}}))
    VectorStore.objects.filter(pk=old.pk).update(last_active_at=timezone.now() - timedelta(days=2))
    html = operator_client.get(STORES).content.decode()
    assert '<span class="vector-store-status" data-status="in_progress">in_progress</span>' in html
    assert '<span class="vector-store-status" data-status="expired">expired</span>' in html
    assert "1 (0 completed, 1 in progress, 0 failed)" in html


def test_the_files_filter_finds_the_stores_with_failed_files(operator_client, handbook, tenant):
    clean = create_vector_store(tenant, parse_vector_store_create({"name": "clean"}))
    html = operator_client.get(STORES, {"files": "failed"}).content.decode()
    assert handbook.pk in html and clean.pk not in html
    html = operator_client.get(STORES, {"files": "in_progress"}).content.decode()
    assert handbook.pk not in html


def test_the_store_list_counts_files_only_for_its_page_never_in_the_paginator(operator_client, handbook):
    with CaptureQueriesContext(connection) as queries:
        assert operator_client.get(STORES).status_code == 200
    files_table = VectorStoreFile._meta.db_table
    counts = [q["sql"] for q in queries.captured_queries
              if q["sql"].upper().startswith("SELECT COUNT(") and VectorStore._meta.db_table in q["sql"]]
    assert counts and all(files_table not in sql for sql in counts)
    assert not any(VectorStoreChunk._meta.db_table in q["sql"] for q in queries.captured_queries)


# --- a store's page ------------------------------------------------------------------------------


def test_the_store_page_shows_its_fields_and_its_files_with_status_error_attributes_and_attempts(
        operator_client, handbook):
    leave, expenses = store_file(handbook, "leave.md"), store_file(handbook, "expenses.md")
    page = operator_client.get(f"{STORES}{quote(handbook.pk)}/change/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "handbook" in html and "&quot;team&quot;: &quot;hr&quot;" in html
    assert '<div class="readonly">wordllama-l2-supercat</div>' in html  # its embedding model
    assert "2 (1 completed, 0 in progress, 1 failed)" in html
    assert '<tr class="vector-store-file" data-status="completed">' in html
    assert f'href="{FILES}{leave.pk}/change/">{leave.file_id}</a>' in html
    assert f'href="{FILES}{expenses.pk}/change/">{expenses.file_id}</a>' in html
    assert "<code>server_error</code> Ingestion stopped unexpectedly 3 times" in html
    assert "{&quot;topic&quot;:&quot;money&quot;}" in html
    assert f"<td>{leave.usage_bytes}</td>" in html and "<td>3</td>" in html  # expenses.md's attempts
    assert f'href="{FILES}?vector_store__id__exact={handbook.pk}&amp;status__exact=failed">1 failed</a>' in html
    assert 'name="_save"' not in html  # read-only


def test_the_file_list_filtered_to_a_store_shows_its_files_with_a_link_back(operator_client, handbook, tenant):
    other = create_vector_store(tenant, parse_vector_store_create({"name": "other"}))
    with mock.patch.object(ingest, "send_ingest_task"):
        elsewhere = attach_file(tenant, other.pk, parse_file_create({"file_id": upload(tenant, "z.md", EXPENSES)}))
    html = operator_client.get(FILES, {"vector_store__id__exact": handbook.pk}).content.decode()
    assert "leave.md" in html and "expenses.md" in html and elsewhere.file_id not in html
    assert f'<a class="vector-store-link" href="{STORES}{quote(handbook.pk)}/change/">{handbook.pk}</a>' in html
    assert "server_error: Ingestion stopped unexpectedly" in html
    failed = operator_client.get(FILES, {"status__exact": "failed", "q": handbook.pk}).content.decode()
    assert "expenses.md" in failed and "leave.md" not in failed


def test_a_file_page_shows_its_error_attributes_and_chunks_and_links_back_to_its_store(operator_client, handbook):
    leave = store_file(handbook, "leave.md")
    html = operator_client.get(f"{FILES}{leave.pk}/change/").content.decode()
    assert f'<a class="vector-store-link" href="{STORES}{quote(handbook.pk)}/change/">' in html
    assert "&quot;topic&quot;: &quot;leave&quot;" in html
    assert leave.chunks.count() == 1 and '<div class="readonly">1</div>' in html


# --- re-ingest -----------------------------------------------------------------------------------


def test_reingesting_a_failed_file_puts_it_in_progress_and_sends_it_after_the_commit(
        operator_client, handbook, django_capture_on_commit_callbacks):
    expenses = store_file(handbook, "expenses.md")
    with mock.patch.object(ingest, "send_ingest_task") as send:
        with django_capture_on_commit_callbacks(execute=False) as callbacks:
            reply = reingest(operator_client, expenses)
        assert reply.status_code == 302
        send.assert_not_called()
        for callback in callbacks:
            callback()
    send.assert_called_once_with(expenses.pk)
    expenses.refresh_from_db()
    assert (expenses.status, expenses.last_error, expenses.ingest_attempts) == ("in_progress", None, 0)
    assert expenses.ingest_sent_at > timezone.now() - timedelta(seconds=30)
    assert not expenses.chunks.exists()
    assert LogEntry.objects.filter(object_id=str(expenses.pk), action_flag=CHANGE,
                                   change_message="Re-ingested from the admin.").exists()

    ingest.ingest(expenses.pk)
    expenses.refresh_from_db()
    assert expenses.status == "completed" and expenses.usage_bytes > 0
    assert hits(handbook, "train tickets") == [("expenses.md", EXPENSES)]


def test_reingesting_a_completed_file_empties_its_chunks_then_indexes_it_exactly_once(
        operator_client, handbook, django_capture_on_commit_callbacks):
    leave = store_file(handbook, "leave.md")
    handbook.refresh_from_db()
    before = (handbook.chunk_count, handbook.term_count, leave.chunks.count(),
              sorted(VectorStoreTerm.objects.filter(vector_store=handbook).values_list("term", "chunks")))
    assert hits(handbook, "annual leave") == [("leave.md", LEAVE)]

    with mock.patch.object(ingest, "send_ingest_task") as send, django_capture_on_commit_callbacks(execute=True):
        reingest(operator_client, leave)
    send.assert_called_once_with(leave.pk)
    leave.refresh_from_db()
    handbook.refresh_from_db()
    assert (leave.status, leave.usage_bytes, leave.chunks.count()) == ("in_progress", 0, 0)
    assert (handbook.chunk_count, handbook.term_count) == (0, 0)
    assert not VectorStoreTerm.objects.filter(vector_store=handbook).exists()
    assert hits(handbook, "annual leave") == []

    ingest.ingest(leave.pk)
    ingest.ingest(leave.pk)  # a second delivery of the same task finds nothing to do
    leave.refresh_from_db()
    handbook.refresh_from_db()
    assert leave.status == "completed"
    assert (handbook.chunk_count, handbook.term_count, leave.chunks.count(),
            sorted(VectorStoreTerm.objects.filter(vector_store=handbook).values_list("term", "chunks"))) == before
    assert hits(handbook, "annual leave") == [("leave.md", LEAVE)]


def test_a_file_detached_before_the_action_runs_is_skipped(operator_client, handbook):
    expenses = store_file(handbook, "expenses.md")
    VectorStoreFile.objects.filter(pk=expenses.pk).delete()
    with mock.patch.object(ingest, "send_ingest_task") as send:
        page = operator_client.post(FILES, {"action": "reingest_files", "_selected_action": [expenses.pk]},
                                    follow=True)
    send.assert_not_called()
    assert page.status_code == 200


# --- who may do what -----------------------------------------------------------------------------


@pytest.mark.parametrize("url", [STORES, FILES])
def test_users_who_are_not_staff_are_sent_to_the_login_page(client, url):
    assert client.get(url).url.startswith(f"/admin/login/?next={url}")
    client.force_login(User.objects.create_user("customer", "c@example.com", "pw-1"))
    reply = client.get(url)
    assert reply.status_code == 302 and reply.url.startswith(f"/admin/login/?next={url}")


def test_a_viewer_sees_the_files_but_may_not_reingest_them(client, handbook):
    viewer = make_viewer()
    viewer.user_permissions.add(*Permission.objects.filter(content_type__app_label="responses_app",
                                                           codename__in=["view_vectorstorefile", "view_vectorstore"]))
    client.force_login(viewer)
    expenses = store_file(handbook, "expenses.md")
    html = client.get(FILES).content.decode()
    assert "expenses.md" in html and 'value="reingest_files"' not in html
    with mock.patch.object(ingest, "send_ingest_task") as send:
        reingest(client, expenses)
    send.assert_not_called()
    expenses.refresh_from_db()
    assert expenses.status == "failed"


def test_stores_and_files_are_read_only_and_the_index_is_not_in_the_console(operator_client, handbook):
    leave = store_file(handbook, "leave.md")
    assert operator_client.get(f"{STORES}add/").status_code == 403
    assert operator_client.get(f"{FILES}add/").status_code == 403
    assert operator_client.get(f"{STORES}{quote(handbook.pk)}/delete/").status_code == 403
    assert operator_client.post(f"{FILES}{leave.pk}/change/", {"status": "failed"}).status_code == 403
    html = operator_client.get(FILES).content.decode()
    assert 'value="reingest_files"' in html and 'value="delete_selected"' not in html
    assert not admin.site.is_registered(VectorStoreChunk) and not admin.site.is_registered(VectorStoreTerm)
    assert operator_client.get("/admin/responses_app/vectorstorechunk/").status_code == 404
    assert operator_client.get("/admin/responses_app/vectorstoreterm/").status_code == 404
