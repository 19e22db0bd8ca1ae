"""The Vector Stores API through the openai SDK (client.vector_stores, .files, .file_batches)
against the API in this process, with ingestion run by the real job code on worker threads:
the SDK's own helpers (upload_and_poll, create_and_poll), search, attributes and filters,
chunking, expiry, the caps, bad input, and isolation between tenants."""

from __future__ import annotations

import datetime as dt
import threading
import time

import openai
import pytest
from django.db import connection, connections, transaction
from django.utils import timezone

from responses_app.vector_stores import ingest
from tests.conftest import http_client
from tests.helpers import assert_openai_error, tiny_pdf

pytestmark = pytest.mark.core

# Words only: the tests of the lexical ranking (BM25, its candidates, its score).
LEXICAL = {"hybrid_search": {"embedding_weight": 0, "text_weight": 1}}
HANDBOOK = {
    "leave.md": "# Leave\n\nEvery employee has 27 days of paid annual leave. Unused leave carries over to March.",
    "expenses.md": "# Expenses\n\nTrain tickets are reimbursed in second class. Receipts go to the finance team.",
    "security.md": "# Security\n\nLaptops lock after five minutes. Report a lost badge to the front desk at once.",
}


def upload(client: openai.OpenAI, name: str, content: bytes | str) -> str:
    data = content.encode() if isinstance(content, str) else content
    return client.files.create(file=(name, data), purpose="assistants").id


def handbook_store(client: openai.OpenAI, stack) -> tuple[str, dict[str, str]]:
    ids = {name: upload(client, name, text) for name, text in HANDBOOK.items()}
    store = client.vector_stores.create(name="handbook", file_ids=list(ids.values()))
    stack.worker.drain()  # the ingestions, on the in-process worker's threads
    return store.id, ids


def test_the_sdk_flow_uploads_a_text_file_and_a_pdf_and_search_finds_the_right_chunk(carol: openai.OpenAI):
    store = carol.vector_stores.create(name="reports", metadata={"team": "finance"})
    assert (store.object, store.name, store.status, store.metadata, store.usage_bytes) == (
        "vector_store", "reports", "completed", {"team": "finance"}, 0)
    assert store.id.startswith("vs_") and store.file_counts.total == 0

    text = carol.vector_stores.files.upload_and_poll(
        vector_store_id=store.id, file=("notes.md", b"The office plant is watered on Mondays by Ada."))
    pdf = carol.vector_stores.files.upload_and_poll(
        vector_store_id=store.id, file=("q3.pdf", tiny_pdf("Quarterly revenue rose 12 percent in Lisbon")))
    for added in (text, pdf):
        assert (added.object, added.status, added.last_error, added.vector_store_id) == (
            "vector_store.file", "completed", None, store.id)
        assert added.usage_bytes > 0 and added.chunking_strategy.type == "static"
    assert pdf.chunking_strategy.static.max_chunk_size_tokens == 800
    assert pdf.chunking_strategy.static.chunk_overlap_tokens == 400

    store = carol.vector_stores.retrieve(store.id)
    assert (store.status, store.file_counts.completed, store.file_counts.total) == ("completed", 2, 2)
    assert store.usage_bytes == text.usage_bytes + pdf.usage_bytes

    results = carol.vector_stores.search(store.id, query="How much did revenue grow?")
    hit, *others = results.data
    assert (hit.file_id, hit.filename) == (pdf.id, "q3.pdf")
    assert hit.content[0].type == "text" and "Quarterly revenue rose 12 percent" in hit.content[0].text
    assert 0 < hit.score <= 1 and all(other.score < hit.score for other in others)
    content = carol.vector_stores.files.content(pdf.id, vector_store_id=store.id)
    assert [part.text for part in content] == ["Quarterly revenue rose 12 percent in Lisbon"]


def test_search_ranks_by_the_rare_terms_and_honours_the_threshold_and_the_number_of_results(
        carol: openai.OpenAI, stack):
    store_id, ids = handbook_store(carol, stack)

    def search(query: str | list[str], **options) -> list:
        return carol.vector_stores.search(store_id, query=query, ranking_options={**LEXICAL, **options.pop(
            "ranking", {})}, **options).data

    results = search("How many days of annual leave do I get?")
    assert results[0].file_id == ids["leave.md"]
    assert [hit.score for hit in results] == sorted((hit.score for hit in results), reverse=True)
    # A list of queries is searched as one.
    both = search(["train tickets", "lost badge"], max_num_results=2)
    assert {hit.file_id for hit in both} == {ids["expenses.md"], ids["security.md"]}
    assert len(search("leave badge tickets", max_num_results=1)) == 1
    assert search("leave", ranking={"score_threshold": 0.99}) == []
    assert search("quantum chromodynamics") == []


def test_hybrid_search_finds_by_meaning_what_shares_no_word_and_scores_it_by_relevance(carol: openai.OpenAI, stack):
    store_id, ids = handbook_store(carol, stack)
    paraphrase = "vacation allowance for staff"  # no word of leave.md's, stemmed or not
    assert carol.vector_stores.search(store_id, query=paraphrase, ranking_options=LEXICAL).data == []
    hybrid = carol.vector_stores.search(store_id, query=paraphrase).data
    assert hybrid[0].file_id == ids["leave.md"]
    semantic = carol.vector_stores.search(store_id, query=paraphrase, ranking_options={
        "hybrid_search": {"embedding_weight": 1, "text_weight": 0}}).data
    assert semantic[0].file_id == ids["leave.md"] and 0 < semantic[0].score <= 1
    # A score is how well the chunk matches, not its rank: a query about nothing in the
    # store scores low, and a threshold leaves it out while it keeps a good match.
    unrelated = carol.vector_stores.search(store_id, query="quantum chromodynamics").data
    assert unrelated and max(hit.score for hit in unrelated) < 0.3
    assert carol.vector_stores.search(store_id, query="quantum chromodynamics",
                                      ranking_options={"score_threshold": 0.3}).data == []
    kept = carol.vector_stores.search(store_id, query="How many days of annual leave do I get?",
                                      ranking_options={"score_threshold": 0.3}).data
    assert [hit.file_id for hit in kept] == [ids["leave.md"]]


def test_attributes_filter_the_search_in_the_query(carol: openai.OpenAI, stack):
    store = carol.vector_stores.create(name="policies")
    for name, year, public in (("leave.md", 2024, True), ("expenses.md", 2025, False), ("security.md", 2026, True)):
        carol.vector_stores.files.create(store.id, file_id=upload(carol, name, HANDBOOK[name]),
                                         attributes={"year": year, "public": public, "name": name})
    stack.worker.drain()

    def found(filters: dict) -> set[str]:
        hits = carol.vector_stores.search(store.id, query="leave tickets badge", filters=filters).data
        return {hit.filename for hit in hits}

    assert found({"type": "eq", "key": "public", "value": True}) == {"leave.md", "security.md"}
    assert found({"type": "gte", "key": "year", "value": 2025}) == {"expenses.md", "security.md"}
    assert found({"type": "in", "key": "name", "value": ["leave.md", "nope.md"]}) == {"leave.md"}
    assert found({"type": "and", "filters": [{"type": "eq", "key": "public", "value": True},
                                             {"type": "lt", "key": "year", "value": 2026}]}) == {"leave.md"}
    assert found({"type": "or", "filters": [{"type": "eq", "key": "year", "value": 2024},
                                            {"type": "ne", "key": "public", "value": True}]}) == {
        "leave.md", "expenses.md"}
    assert found({"type": "eq", "key": "missing", "value": "x"}) == set()
    hit = carol.vector_stores.search(store.id, query="badge").data[0]
    assert hit.attributes == {"year": 2026, "public": True, "name": "security.md"}

    updated = carol.vector_stores.files.update(hit.file_id, vector_store_id=store.id, attributes={"year": 1999})
    assert updated.attributes == {"year": 1999}
    assert found({"type": "gte", "key": "year", "value": 2025}) == {"expenses.md"}


def test_a_static_chunking_strategy_cuts_overlapping_chunks(carol: openai.OpenAI):
    words = " ".join(f"word{n}" for n in range(3000))
    store = carol.vector_stores.create(name="long")
    added = carol.vector_stores.files.create_and_poll(
        file_id=upload(carol, "long.txt", words), vector_store_id=store.id,
        chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 50}})
    assert added.status == "completed"
    assert added.chunking_strategy.static.max_chunk_size_tokens == 100
    hits = carol.vector_stores.search(store.id, query="word1500", max_num_results=50, ranking_options=LEXICAL).data
    # Each chunk's window of 100 tokens moves by 50: a word is in two chunks.
    assert len(hits) == 2 and all("word1500" in hit.content[0].text for hit in hits)
    assert carol.vector_stores.files.content(added.id, vector_store_id=store.id).data[0].text == words


def test_a_stores_chunking_strategy_chunks_every_file_added_later_without_its_own(carol: openai.OpenAI):
    words = " ".join(f"word{n}" for n in range(3000))
    static = {"type": "static", "static": {"max_chunk_size_tokens": 100, "chunk_overlap_tokens": 50}}
    store = carol.vector_stores.create(name="chunked", chunking_strategy=static)  # no file_ids: as OpenAI takes it
    added = carol.vector_stores.files.create_and_poll(file_id=upload(carol, "long.txt", words),
                                                      vector_store_id=store.id)
    batch = carol.vector_stores.file_batches.create_and_poll(store.id, file_ids=[upload(carol, "b.txt", words)])
    own = carol.vector_stores.files.create_and_poll(
        file_id=upload(carol, "own.txt", words), vector_store_id=store.id,
        chunking_strategy={"type": "static", "static": {"max_chunk_size_tokens": 400, "chunk_overlap_tokens": 0}})
    assert added.status == own.status == "completed" and batch.file_counts.completed == 1
    in_batch = carol.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id).data[0]
    sizes = {f.id: (f.chunking_strategy.static.max_chunk_size_tokens, f.chunking_strategy.static.chunk_overlap_tokens)
             for f in (added, in_batch, own)}
    assert sizes == {added.id: (100, 50), in_batch.id: (100, 50), own.id: (400, 0)}
    hits = carol.vector_stores.search(store.id, query="word1500", max_num_results=50, ranking_options=LEXICAL).data
    # The store's windows of 100 tokens move by 50 (a word in two chunks of each such file),
    # the file's own of 400 by 400 (in one).
    assert sorted(hit.file_id for hit in hits) == sorted([added.id] * 2 + [in_batch.id] * 2 + [own.id])
    auto = carol.vector_stores.files.create_and_poll(file_id=upload(carol, "auto.txt", "auto words"),
                                                     vector_store_id=carol.vector_stores.create(name="auto").id)
    assert (auto.chunking_strategy.static.max_chunk_size_tokens,
            auto.chunking_strategy.static.chunk_overlap_tokens) == (800, 400)


def test_stores_are_listed_in_pages_updated_and_deleted(carol: openai.OpenAI):
    ids = [carol.vector_stores.create(name=f"s{n}").id for n in range(5)]
    assert [store.id for store in carol.vector_stores.list()] == ids[::-1]
    page = carol.vector_stores.list(order="asc", limit=2, after=ids[0])
    assert [store.id for store in page.data] == ids[1:3] and page.has_more
    assert [store.id for store in carol.vector_stores.list(order="asc", limit=2, before=ids[3]).data] == ids[1:3]

    updated = carol.vector_stores.update(ids[0], name="renamed", metadata={"a": "b"},
                                         expires_after={"anchor": "last_active_at", "days": 7})
    assert (updated.name, updated.metadata, updated.expires_after.days) == ("renamed", {"a": "b"}, 7)
    assert updated.expires_at == updated.last_active_at + 7 * 86400
    assert carol.vector_stores.update(ids[0], expires_after=None).expires_at is None

    deleted = carol.vector_stores.delete(ids[0])
    assert (deleted.id, deleted.object, deleted.deleted) == (ids[0], "vector_store.deleted", True)
    with pytest.raises(openai.NotFoundError):
        carol.vector_stores.retrieve(ids[0])


def test_files_are_listed_by_status_taken_out_and_their_index_goes_with_them(carol: openai.OpenAI, stack, db_access):
    from responses_app.models import VectorStore, VectorStoreChunk, VectorStoreTerm

    store_id, ids = handbook_store(carol, stack)
    assert len(carol.vector_stores.files.list(store_id, filter="completed").data) == 3
    assert carol.vector_stores.files.list(store_id, filter="failed").data == []
    removed = carol.vector_stores.files.delete(ids["leave.md"], vector_store_id=store_id)
    assert (removed.object, removed.deleted) == ("vector_store.file.deleted", True)
    assert all(hit.file_id != ids["leave.md"]
               for hit in carol.vector_stores.search(store_id, query="annual leave days").data)
    carol.files.retrieve(ids["leave.md"])  # the file itself stays

    # A file deleted from the Files API leaves its stores too.
    carol.files.delete(ids["expenses.md"])
    assert [f.id for f in carol.vector_stores.files.list(store_id)] == [ids["security.md"]]
    carol.vector_stores.files.delete(ids["security.md"], vector_store_id=store_id)
    store = VectorStore.objects.get(pk=store_id)
    assert (store.chunk_count, store.term_count) == (0, 0)
    assert not VectorStoreChunk.objects.filter(vector_store=store).exists()
    assert not VectorStoreTerm.objects.filter(vector_store=store).exists()


def test_a_file_batch_attaches_files_with_their_attributes_and_lists_them(carol: openai.OpenAI):
    store = carol.vector_stores.create(name="batch")
    ids = [upload(carol, name, text) for name, text in HANDBOOK.items()]
    batch = carol.vector_stores.file_batches.create_and_poll(store.id, file_ids=ids, attributes={"source": "hr"})
    assert (batch.object, batch.status, batch.file_counts.completed, batch.file_counts.total) == (
        "vector_store.files_batch", "completed", 3, 3)
    listed = carol.vector_stores.file_batches.list_files(batch.id, vector_store_id=store.id)
    assert sorted(f.id for f in listed) == sorted(ids)
    assert all(f.attributes == {"source": "hr"} for f in listed)
    each = carol.vector_stores.file_batches.create_and_poll(
        store.id, files=[{"file_id": ids[0], "attributes": {"source": "legal"}}])
    assert each.file_counts.completed == 1
    assert carol.vector_stores.files.retrieve(ids[0], vector_store_id=store.id).attributes == {"source": "legal"}
    assert carol.vector_stores.retrieve(store.id).file_counts.total == 3  # added again, not twice

    uploaded = carol.vector_stores.file_batches.upload_and_poll(store.id, files=[("new.md", b"Fresh text here.")])
    assert uploaded.file_counts.completed == 1


def test_a_cancelled_batch_cancels_its_files_not_yet_ingested(carol: openai.OpenAI, monkeypatch):
    monkeypatch.setattr(ingest, "send_ingest_task", lambda store_file_id: None)  # a worker that has not begun
    store = carol.vector_stores.create(name="cancel")
    batch = carol.vector_stores.file_batches.create(store.id, file_ids=[upload(carol, "a.md", "alpha")])
    assert (batch.status, batch.file_counts.in_progress) == ("in_progress", 1)
    cancelled = carol.vector_stores.file_batches.cancel(batch.id, vector_store_id=store.id)
    assert (cancelled.status, cancelled.file_counts.cancelled) == ("cancelled", 1)
    assert carol.vector_stores.retrieve(store.id).status == "completed"


def test_a_pdf_without_its_cross_reference_table_is_read(carol: openai.OpenAI):
    whole = tiny_pdf("Lighthouse keepers log the weather")
    no_xref = whole[: whole.index(b"xref")] + b"trailer\n<< /Root 1 0 R >>\n%%EOF\n"
    store = carol.vector_stores.create(name="pdf")
    added = carol.vector_stores.files.upload_and_poll(vector_store_id=store.id, file=("log.pdf", no_xref))
    assert added.status == "completed"
    assert carol.vector_stores.search(store.id, query="lighthouse").data[0].filename == "log.pdf"


def test_a_file_that_cannot_be_read_fails_with_its_reason(carol: openai.OpenAI):
    store = carol.vector_stores.create(name="bad")
    # A file batch does not read its files up front: the ingestion finds what is wrong.
    batch = carol.vector_stores.file_batches.create_and_poll(store.id, file_ids=[
        upload(carol, "blob.bin", b"\x00\xff" * 100), upload(carol, "broken.pdf", b"%PDF-1.4 no more"),
        upload(carol, "spaces.txt", b"   \n\n  ")])
    assert (batch.status, batch.file_counts.failed) == ("failed", 3)
    errors = {f.last_error.code for f in carol.vector_stores.files.list(store.id)}
    assert errors == {"unsupported_file", "invalid_file"}
    assert carol.vector_stores.retrieve(store.id).usage_bytes == 0


def test_an_expired_store_says_so_and_cannot_be_searched(carol: openai.OpenAI, db_access):
    from responses_app.models import VectorStore

    store = carol.vector_stores.create(name="old", expires_after={"anchor": "last_active_at", "days": 1})
    VectorStore.objects.filter(pk=store.id).update(last_active_at=timezone.now() - dt.timedelta(days=2))
    assert carol.vector_stores.retrieve(store.id).status == "expired"
    with pytest.raises(openai.BadRequestError) as expired:
        carol.vector_stores.search(store.id, query="anything")
    assert expired.value.code == "expired"


def test_a_stalled_ingestion_is_sent_again_and_fails_after_its_attempts(carol: openai.OpenAI, db_access, monkeypatch,
                                                                         settings):
    from responses_app.models import VectorStoreFile

    lost: list[int] = []
    monkeypatch.setattr(ingest, "send_ingest_task", lost.append)  # the message is lost
    # Under the live stack's 8 s, so that its beat (sharing this database) leaves these rows alone.
    settings.VECTOR_STORE_INGEST_STALL_S = 2
    store = carol.vector_stores.create(name="stall")
    file_id = upload(carol, "a.md", "A lost message is sent again.")
    carol.vector_stores.files.create(store.id, file_id=file_id)
    row = VectorStoreFile.objects.get(vector_store_id=store.id, file_id=file_id)
    assert lost == [row.pk]

    stale = timezone.now() - dt.timedelta(seconds=settings.VECTOR_STORE_INGEST_STALL_S + 1)
    VectorStoreFile.objects.filter(pk=row.pk).update(ingest_sent_at=stale)
    assert ingest.sweep_stalled() == 1 and lost == [row.pk, row.pk]
    row.refresh_from_db()
    assert row.ingest_attempts == 0  # waiting in the queue is no attempt
    # A worker reading the file now (its progress fresh): a duplicate message leaves it alone.
    VectorStoreFile.objects.filter(pk=row.pk).update(ingest_attempts=1, ingest_beat_at=timezone.now())
    ingest.ingest(row.pk)
    assert carol.vector_stores.files.retrieve(file_id, vector_store_id=store.id).status == "in_progress"
    VectorStoreFile.objects.filter(pk=row.pk).update(ingest_beat_at=stale)  # ... until that worker is lost
    ingest.ingest(row.pk)
    row.refresh_from_db()
    assert (row.status, row.ingest_attempts) == ("completed", 2)
    ingest.ingest(row.pk)  # a duplicate message finds nothing to do
    assert carol.vector_stores.search(store.id, query="lost message").data.__len__() == 1

    other = upload(carol, "b.md", "Never ingested.")
    carol.vector_stores.files.create(store.id, file_id=other)
    VectorStoreFile.objects.filter(vector_store_id=store.id, file_id=other).update(
        ingest_sent_at=stale, ingest_beat_at=stale, ingest_attempts=settings.VECTOR_STORE_INGEST_MAX_ATTEMPTS)
    ingest.sweep_stalled()
    failed = carol.vector_stores.files.retrieve(other, vector_store_id=store.id)
    assert failed.status == "failed" and failed.last_error.code == "server_error"


@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite has no row locks to pass by")
def test_the_sweep_passes_by_a_file_whose_index_is_being_written(carol: openai.OpenAI, db_access, monkeypatch,
                                                                 settings):
    from responses_app.models import VectorStoreFile

    sent: list[int] = []
    monkeypatch.setattr(ingest, "send_ingest_task", sent.append)
    settings.VECTOR_STORE_INGEST_STALL_S = 2  # under the live stack's 8 s, as above
    store = carol.vector_stores.create(name="locked")
    file_id = upload(carol, "a.md", "Its index is being written.")
    carol.vector_stores.files.create(store.id, file_id=file_id)
    row = VectorStoreFile.objects.get(vector_store_id=store.id, file_id=file_id)
    stale = timezone.now() - dt.timedelta(seconds=settings.VECTOR_STORE_INGEST_STALL_S + 1)
    VectorStoreFile.objects.filter(pk=row.pk).update(ingest_sent_at=stale, ingest_beat_at=stale, ingest_attempts=1)
    sent.clear()
    # Another connection holds the row as an ingestion's transaction does from its flip on.
    locked, release = threading.Event(), threading.Event()

    def write_the_index() -> None:
        with transaction.atomic():
            VectorStoreFile.objects.select_for_update().get(pk=row.pk)
            locked.set()
            release.wait(30)
        connections.close_all()

    writer = threading.Thread(target=write_the_index)
    writer.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        assert ingest.sweep_stalled() == 0 and sent == []
        assert time.monotonic() - started < 5  # passed by, not waited for
    finally:
        release.set()
        writer.join()
    assert ingest.sweep_stalled() == 1 and sent == [row.pk]  # once the lock is gone, it is stalled


BAD_SEARCHES = [
    ({"query": "x" * 100_000}, "query"),
    ({"query": 7}, "query"),
    ({"query": []}, "query"),
    ({"query": "x", "filters": {"type": "gt", "key": "year", "value": True}}, "filters.value"),
    ({"query": "x", "filters": {"type": "eq", "key": "year", "value": ["a"]}}, "filters.value"),
    ({"query": "x", "filters": {"type": "in", "key": "year", "value": "a"}}, "filters.value"),
    ({"query": "x", "filters": {"type": "xor", "filters": []}}, "filters.type"),
    ({"query": "x", "filters": {"type": "and", "filters": []}}, "filters.filters"),
    ({"query": "x", "max_num_results": 51}, "max_num_results"),
    ({"query": "x", "ranking_options": {"score_threshold": 2}}, "ranking_options.score_threshold"),
    ({"query": "x", "ranking_options": {"ranker": "best"}}, "ranking_options.ranker"),
    ({"query": "x", "ranking_options": {"hybrid_search": 1}}, "ranking_options.hybrid_search"),
    ({"query": "x", "ranking_options": {"hybrid_search": {"embedding_weight": -1, "text_weight": 1}}},
     "ranking_options.hybrid_search.embedding_weight"),
    ({"query": "x", "ranking_options": {"hybrid_search": {"embedding_weight": 0, "text_weight": 0}}},
     "ranking_options.hybrid_search"),
    ({"query": "x", "ranking_options": {"hybrid_search": {"embedding_weight": 1}}}, "text_weight"),
    ({"query": "x", "unknown": 1}, "unknown"),
]


@pytest.mark.parametrize(("body", "param"), BAD_SEARCHES)
def test_a_bad_search_is_a_400_naming_its_parameter(carol: openai.OpenAI, stack, body: dict, param: str):
    store = carol.vector_stores.create(name="bad-search")
    with http_client(stack, carol.api_key) as http:
        assert_openai_error(http.post(f"/vector_stores/{store.id}/search", json=body), 400, param)


def test_a_file_that_cannot_be_indexed_fails_alone_with_its_last_error(carol: openai.OpenAI, stack, settings):
    # The size cap is checked where the file is attached (this process, which the setting reaches).
    settings.VECTOR_STORE_FILE_MAX_BYTES = 1000
    good = {name: upload(carol, name, text) for name, text in HANDBOOK.items()}
    bad = {upload(carol, "blob.bin", b"\x89PNG\r\n\x1a\n\x00\x00"): "unsupported_file",
           upload(carol, "big.txt", b"x " * 501): "invalid_file",
           upload(carol, "blank.txt", b" \n\t\n"): "invalid_file"}
    store = carol.vector_stores.create(name="mixed")
    batch = carol.vector_stores.file_batches.create_and_poll(store.id, file_ids=[*good.values(), *bad])
    assert batch.status == "completed"
    assert (batch.file_counts.completed, batch.file_counts.failed, batch.file_counts.total) == (3, 3, 6)
    failed = carol.vector_stores.files.list(store.id, filter="failed").data
    assert {f.id: f.last_error.code for f in failed} == bad and all(f.last_error.message for f in failed)
    assert "1000 bytes" in next(f for f in failed if f.last_error.message.endswith("(VECTOR_STORE_FILE_MAX_BYTES)."
                                                                                  )).last_error.message
    assert {hit.filename for hit in carol.vector_stores.search(store.id, query="leave badge receipts").data} == set(
        HANDBOOK)
    # One at a time, and among a create's files: the same, never a 400 for the others.
    alone = carol.vector_stores.files.create_and_poll(file_id=next(iter(bad)), vector_store_id=store.id)
    assert (alone.status, alone.last_error.code) == ("failed", "unsupported_file")
    store = carol.vector_stores.create(name="with a bad file", file_ids=[good["leave.md"], *bad])
    stack.worker.drain()  # the ingestions, on the in-process worker's threads
    statuses = {f.id: f.status for f in carol.vector_stores.files.list(store.id).data}
    assert statuses == {good["leave.md"]: "completed", **{file_id: "failed" for file_id in bad}}


def test_bad_store_and_file_requests_are_400s_and_nothing_is_stored(carol: openai.OpenAI, carol_tenant: str,
                                                                    stack, db_access):
    from responses_app.models import VectorStore, VectorStoreFile

    store = carol.vector_stores.create(name="refusals")
    good = upload(carol, "ok.txt", "fine")
    with http_client(stack, carol.api_key) as http:
        assert_openai_error(http.post(f"/vector_stores/{store.id}/files", json={"file_id": "file-nope"}),
                            404, "file_id")
        # One missing file of several: the store is not created.
        assert_openai_error(http.post("/vector_stores", json={"file_ids": [good, "file-nope"]}), 404, "file_id")
        for body, param in (
                ({"name": 5}, "name"),
                ({"expires_after": {"anchor": "created_at", "days": 1}}, "expires_after.anchor"),
                ({"file_ids": [good], "chunking_strategy": {"type": "static", "static": {
                    "max_chunk_size_tokens": 100, "chunk_overlap_tokens": 60}}},
                 "chunking_strategy.static.chunk_overlap_tokens"),
                ({"chunking_strategy": {"type": "static", "static": {
                    "max_chunk_size_tokens": 5000, "chunk_overlap_tokens": 0}}},
                 "chunking_strategy.static.max_chunk_size_tokens"),
                ({"chunking_strategy": {"type": "other"}}, "chunking_strategy")):
            assert_openai_error(http.post("/vector_stores", json=body), 400, param)
        assert_openai_error(http.post(f"/vector_stores/{store.id}/files", json={
            "file_id": good, "attributes": {"k": {"nested": 1}}}), 400, "attributes.k")
        assert_openai_error(http.post(f"/vector_stores/{store.id}/file_batches", json={
            "file_ids": [good], "files": [{"file_id": good}]}), 400, "file_ids")
    assert VectorStore.objects.filter(tenant__name=carol_tenant).count() == 1
    assert not VectorStoreFile.objects.filter(vector_store_id=store.id).exists()


def test_the_tenant_caps_are_a_429(carol: openai.OpenAI, settings):
    settings.VECTOR_STORE_MAX_STORES = 1
    settings.VECTOR_STORE_MAX_FILES = 1
    store = carol.vector_stores.create(name="one")
    carol.vector_stores.files.create(store.id, file_id=upload(carol, "a.md", "first"))
    limited = carol.with_options(max_retries=0)
    with pytest.raises(openai.RateLimitError) as stores:
        limited.vector_stores.create(name="two")
    assert stores.value.code == "vector_store_quota_exceeded"
    with pytest.raises(openai.RateLimitError):
        limited.vector_stores.files.create(store.id, file_id=upload(carol, "b.md", "second"))
    settings.VECTOR_STORE_MAX_FILES = 10
    settings.VECTOR_STORE_MAX_BYTES = 8
    with pytest.raises(openai.RateLimitError):
        limited.vector_stores.files.create(store.id, file_id=upload(carol, "c.md", "more than eight bytes"))


def test_another_tenants_store_is_a_404_on_every_endpoint(carol: openai.OpenAI, bob: openai.OpenAI, stack):
    store_id, ids = handbook_store(carol, stack)
    file_id = ids["leave.md"]
    batch = carol.vector_stores.file_batches.create(store_id, file_ids=[file_id], attributes={"team": "hr"})
    stack.worker.drain()
    calls = [
        ("GET", f"/vector_stores/{store_id}", None), ("POST", f"/vector_stores/{store_id}", {"name": "x"}),
        ("DELETE", f"/vector_stores/{store_id}", None),
        ("POST", f"/vector_stores/{store_id}/search", {"query": "leave"}),
        ("GET", f"/vector_stores/{store_id}/files", None),
        ("POST", f"/vector_stores/{store_id}/files", {"file_id": file_id}),
        ("GET", f"/vector_stores/{store_id}/files/{file_id}", None),
        ("POST", f"/vector_stores/{store_id}/files/{file_id}", {"attributes": {}}),
        ("DELETE", f"/vector_stores/{store_id}/files/{file_id}", None),
        ("GET", f"/vector_stores/{store_id}/files/{file_id}/content", None),
        ("POST", f"/vector_stores/{store_id}/file_batches", {"file_ids": [file_id]}),
        ("GET", f"/vector_stores/{store_id}/file_batches/{batch.id}", None),
        ("POST", f"/vector_stores/{store_id}/file_batches/{batch.id}/cancel", None),
        ("GET", f"/vector_stores/{store_id}/file_batches/{batch.id}/files", None),
    ]
    with http_client(stack, bob.api_key) as http:
        for method, path, body in calls:
            answer = http.request(method, path, json=body)
            assert answer.status_code == 404, (method, path, answer.text)
        assert store_id not in [store["id"] for store in http.get("/vector_stores").json()["data"]]
    stack.worker.drain()
    # Untouched: the store, its files (none re-attached, detached or re-ingested), its batch
    # (not cancelled) and its index.
    store = carol.vector_stores.retrieve(store_id)
    assert (store.name, store.file_counts.completed, store.file_counts.total) == ("handbook", 3, 3)
    files = {f.id: (f.status, f.attributes) for f in carol.vector_stores.files.list(store_id)}
    assert files == {ids["leave.md"]: ("completed", {"team": "hr"}), ids["expenses.md"]: ("completed", None),
                     ids["security.md"]: ("completed", None)}
    batch = carol.vector_stores.file_batches.retrieve(batch.id, vector_store_id=store_id)
    assert (batch.status, batch.file_counts.completed, batch.file_counts.cancelled) == ("completed", 1, 0)
    assert carol.vector_stores.search(store_id, query="annual leave").data[0].file_id == file_id



def test_the_vectors_a_process_keeps_follow_the_store_s_files(carol: openai.OpenAI, stack):
    """The web process keeps a store's vectors after its first search: a file added or
    deleted since is found, or no more, by meaning at the next search."""
    store_id, ids = handbook_store(carol, stack)
    semantic = {"hybrid_search": {"embedding_weight": 1, "text_weight": 0}}

    def files(query: str) -> list[str]:
        return [hit.filename for hit in carol.vector_stores.search(store_id, query=query,
                                                                   ranking_options=semantic).data]

    assert "pets.md" not in files("a puppy and a kitten")
    added = carol.vector_stores.files.upload_and_poll(
        vector_store_id=store_id, file=("pets.md", b"Dogs and cats may come to the office on Fridays."))
    assert files("a puppy and a kitten")[0] == "pets.md"
    carol.vector_stores.files.delete(added.id, vector_store_id=store_id)
    assert "pets.md" not in files("a puppy and a kitten")
    assert files("vacation allowance")[0] == "leave.md" and set(files("vacation allowance")) == set(HANDBOOK)
