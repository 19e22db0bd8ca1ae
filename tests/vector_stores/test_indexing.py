"""A store's BM25 statistics (chunks per term) as files go in and out, one at a time and
several at once on the workers' threads (committed rows, as the workers write them: a
tenant of the test's own, deleted after; never a flush, which would empty the tables
under the live stack that shares the test database)."""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from collections.abc import Iterator

import pytest
from django.db import connection, transaction

from responses_app.models import StoredFile, Tenant, VectorStore, VectorStoreFile, VectorStoreTerm
from responses_app.vector_stores import indexing


def new_file(store: VectorStore, name: str) -> VectorStoreFile:
    stored = StoredFile.objects.create(tenant=store.tenant, filename=name, purpose="assistants", bytes=1)
    return VectorStoreFile.objects.create(vector_store=store, file=stored, max_chunk_size_tokens=800,
                                          chunk_overlap_tokens=400)


def pieces(words: list[str], chunk_count: int) -> list[tuple[str, list[str]]]:
    return [(" ".join(words), [*words, f"only{n}"]) for n in range(chunk_count)]


def held(store: VectorStore) -> dict[str, int]:
    return dict(VectorStoreTerm.objects.filter(vector_store=store).values_list("term", "chunks"))


@pytest.fixture
def store(db_access) -> Iterator[VectorStore]:
    tenant = Tenant.objects.create(name=f"indexing-{uuid.uuid4().hex[:8]}")
    try:
        yield VectorStore.objects.create(tenant=tenant, name="terms")
    finally:
        tenant.delete()


def test_each_term_counts_the_chunks_that_hold_it_as_files_come_and_go(store):
    first, second = new_file(store, "a.txt"), new_file(store, "b.txt")
    indexing.add_chunks(first, pieces(["ferri", "harbour"], 3))
    indexing.add_chunks(second, pieces(["harbour", "tide"], 2))
    assert held(store) == {"ferri": 3, "harbour": 5, "tide": 2, "only0": 2, "only1": 2, "only2": 1}

    indexing.remove_chunks(first)
    assert held(store) == {"harbour": 2, "tide": 2, "only0": 1, "only1": 1}  # a term held by none is gone
    store.refresh_from_db()
    assert (store.chunk_count, store.term_count) == (2, 6)


def test_files_sharing_their_terms_indexed_and_removed_at_once_count_each_chunk_once(store):
    # Every file shares every term: each transaction locks the rows that the others lock,
    # in the same order, so they wait for each other and never deadlock.
    vocabulary = [f"word{n}" for n in range(3000)]
    kept = [new_file(store, f"kept{n}.txt") for n in range(3)]
    removed = [new_file(store, f"removed{n}.txt") for n in range(3)]
    for store_file in removed:
        indexing.add_chunks(store_file, pieces(vocabulary[::-1], 2))
    errors: list[BaseException] = []

    def write(change, store_file: VectorStoreFile) -> None:
        try:
            with transaction.atomic():
                change(store_file)
        except BaseException as error:  # noqa: BLE001 - reported below
            errors.append(error)
        finally:
            connection.close()  # this thread's

    threads = [threading.Thread(target=write, args=(lambda f: indexing.add_chunks(f, pieces(vocabulary, 2)), f))
               for f in kept]
    threads += [threading.Thread(target=write, args=(indexing.remove_chunks, f)) for f in removed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert held(store) == Counter({word: 6 for word in vocabulary} | {"only0": 3, "only1": 3})
