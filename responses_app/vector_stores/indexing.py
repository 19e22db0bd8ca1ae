"""Writing a file's chunks into a store's index, and taking them out, each in the caller's
transaction with the statistics that BM25 reads (the store's chunk and term counts, the
chunks per term): the index never holds half a file."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

import numpy as np
from django.db import connection
from django.db.backends.utils import CursorWrapper
from django.db.models import F

from responses_app.models import VectorStore, VectorStoreChunk, VectorStoreFile, VectorStoreTerm
from responses_app.vector_stores.analysis import store_token
from responses_app.vector_stores.vectors import vector_bytes

INSERT_BATCH = 500
TERM_TABLE = VectorStoreTerm._meta.db_table


def add_chunks(store_file: VectorStoreFile, pieces: Sequence[tuple[str, list[str]]],
               vectors: np.ndarray | None = None) -> None:
    """The file's chunks (text, terms), in order, into its store's index, with their unit
    vectors (a row each) where the store has an embedding model."""
    token = store_token(store_file.vector_store_id)
    stored = [None] * len(pieces) if vectors is None else [vector_bytes(vector) for vector in vectors]
    VectorStoreChunk.objects.bulk_create(
        (VectorStoreChunk(vector_store_id=store_file.vector_store_id, vector_store_file=store_file, position=n,
                          text=text, terms=" ".join([token, *chunk_terms]), term_count=len(chunk_terms),
                          embedding=embedding)
         for n, ((text, chunk_terms), embedding) in enumerate(zip(pieces, stored, strict=True))),
        batch_size=INSERT_BATCH)
    _count_terms(store_file.vector_store_id, Counter(term for _, chunk_terms in pieces for term in set(chunk_terms)),
                 sign=1)
    VectorStore.objects.filter(pk=store_file.vector_store_id).update(
        chunk_count=F("chunk_count") + len(pieces), index_version=F("index_version") + 1,
        term_count=F("term_count") + sum(len(chunk_terms) for _, chunk_terms in pieces))


def remove_chunks(store_file: VectorStoreFile) -> None:
    """The file's chunks out of its store's index (none for a file not indexed)."""
    chunks = list(VectorStoreChunk.objects.filter(vector_store_file=store_file).values_list("terms", "term_count"))
    if not chunks:
        return
    # A chunk's terms start with the store's token, which is no term of BM25's.
    _count_terms(store_file.vector_store_id, Counter(term for text, _ in chunks for term in set(text.split()[1:])),
                 sign=-1)
    VectorStoreChunk.objects.filter(vector_store_file=store_file).delete()
    VectorStore.objects.filter(pk=store_file.vector_store_id).update(
        chunk_count=F("chunk_count") - len(chunks), term_count=F("term_count") - sum(n for _, n in chunks),
        index_version=F("index_version") + 1)


def _count_terms(store_id: str, held: Counter[str], sign: int) -> None:
    # In the terms' order (code points: Python's sort and COLLATE "C" agree), so that two
    # files of one store indexed at once on PostgreSQL lock the rows they share in the same
    # order, never in a deadlock. Every file of a store shares most of these rows, so their
    # index writes queue behind each other from here to their commit: this is kept short.
    rows = sorted(held.items())
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            _count_in_one_statement(cursor, store_id, rows, sign)
        else:
            _count_in_batches(cursor, store_id, rows, sign)
        if sign < 0:
            cursor.execute(f"DELETE FROM {TERM_TABLE} WHERE vector_store_id = %s AND chunks <= 0", [store_id])


def _count_in_one_statement(cursor: CursorWrapper, store_id: str, rows: list[tuple[str, int]], sign: int) -> None:
    """PostgreSQL: the counts as two arrays, in one statement (a file's 20,000 terms in a
    third of the time of statements of INSERT_BATCH rows)."""
    held = [[term for term, _ in rows], [count for _, count in rows]]
    if sign > 0:
        cursor.execute(
            f"INSERT INTO {TERM_TABLE} (vector_store_id, term, chunks) SELECT %s, held.term, held.chunks "
            "FROM unnest(%s::text[], %s::integer[]) AS held(term, chunks) "
            f"ON CONFLICT (vector_store_id, term) DO UPDATE SET chunks = {TERM_TABLE}.chunks + excluded.chunks",
            [store_id, *held])
        return
    # An UPDATE ... FROM locks in the order of its plan: the rows are locked first, in order.
    cursor.execute(f"SELECT count(*) FROM (SELECT 1 FROM {TERM_TABLE} WHERE vector_store_id = %s AND term = ANY(%s) "
                   'ORDER BY term COLLATE "C" FOR UPDATE) AS locked', [store_id, held[0]])
    cursor.execute(f"UPDATE {TERM_TABLE} SET chunks = {TERM_TABLE}.chunks - held.chunks "
                   "FROM unnest(%s::text[], %s::integer[]) AS held(term, chunks) "
                   f"WHERE {TERM_TABLE}.vector_store_id = %s AND {TERM_TABLE}.term = held.term", [*held, store_id])


def _count_in_batches(cursor: CursorWrapper, store_id: str, rows: list[tuple[str, int]], sign: int) -> None:
    """SQLite: statements of INSERT_BATCH rows (it has no arrays, and no row locks to hold)."""
    if sign < 0:
        cursor.executemany(f"UPDATE {TERM_TABLE} SET chunks = chunks - %s WHERE vector_store_id = %s AND term = %s",
                           [(count, store_id, term) for term, count in rows])
        return
    for batch in _batches(rows):
        cursor.execute(
            f"INSERT INTO {TERM_TABLE} (vector_store_id, term, chunks) VALUES "
            + ", ".join(["(%s, %s, %s)"] * len(batch))
            + f" ON CONFLICT (vector_store_id, term) DO UPDATE SET chunks = {TERM_TABLE}.chunks + "
            "excluded.chunks", [value for term, count in batch for value in (store_id, term, count)])


def _batches(rows: list[tuple[str, int]]) -> Iterable[list[tuple[str, int]]]:
    for start in range(0, len(rows), INSERT_BATCH):
        yield rows[start : start + INSERT_BATCH]
