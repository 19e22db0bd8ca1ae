"""The semantic half of search: the chunks whose vectors are nearest to the queries'.

A store's chunk vectors are stored with its chunks (float16) and read into memory, as one
float32 matrix per store, by the process that searches it; a search is then one matrix
product. The copy is good while the store's ``index_version`` is the one it was read at
(every index change moves it on), and the least recently searched stores leave memory
once the copies pass settings.VECTOR_STORE_VECTOR_CACHE_BYTES. Neither pgvector nor
sqlite-vec is needed: at 256 dimensions a product over 100,000 chunks takes a few ms."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from django.conf import settings

from responses_app.embeddings.registry import embedding_model, is_served
from responses_app.models import VectorStore, VectorStoreChunk

STORED_DTYPE = np.dtype("<f2")


def vector_bytes(vector: np.ndarray) -> bytes:
    return vector.astype(STORED_DTYPE).tobytes()


@dataclass(frozen=True)
class _StoreVectors:
    version: int
    chunk_ids: np.ndarray
    file_ids: np.ndarray
    matrix: np.ndarray  # a unit vector per chunk, float32

    @property
    def nbytes(self) -> int:
        return self.chunk_ids.nbytes + self.file_ids.nbytes + self.matrix.nbytes


_copies: OrderedDict[str, _StoreVectors] = OrderedDict()
_lock = threading.Lock()


def nearest(stores: Sequence[VectorStore], queries: Sequence[str], file_ids: list[int] | None,
            count: int) -> list[tuple[int, float]]:
    """At most ``count`` chunks of the stores (of ``file_ids`` only, when given), nearest to
    any of the queries first: (chunk id, cosine similarity). A store without an embedding
    model that the registry serves adds none."""
    found: list[tuple[int, float]] = []
    query_vectors: dict[str, np.ndarray] = {}  # by model: stores that share one embed the queries once
    for store in stores:
        if not store.embedding_model or not is_served(store.embedding_model):
            continue
        copy = _store_vectors(store)
        if not len(copy.chunk_ids):
            continue
        if store.embedding_model not in query_vectors:
            query_vectors[store.embedding_model] = embedding_model(store.embedding_model).embed(list(queries))
        similarity = (copy.matrix @ query_vectors[store.embedding_model].T).max(axis=1)
        if file_ids is not None:
            similarity[~np.isin(copy.file_ids, file_ids)] = -np.inf
        best = np.argpartition(-similarity, min(count, len(similarity)) - 1)[:count]
        found += [(int(copy.chunk_ids[row]), float(similarity[row])) for row in best if similarity[row] > -np.inf]
    found.sort(key=lambda pair: -pair[1])
    return found[:count]


def _store_vectors(store: VectorStore) -> _StoreVectors:
    with _lock:
        copy = _copies.get(store.pk)
        if copy is not None and copy.version == store.index_version:
            _copies.move_to_end(store.pk)
            return copy
    copy = _read(store)
    with _lock:
        _copies[store.pk] = copy
        _copies.move_to_end(store.pk)
        cap = settings.VECTOR_STORE_VECTOR_CACHE_BYTES
        while len(_copies) > 1 and sum(kept.nbytes for kept in _copies.values()) > cap:
            _copies.popitem(last=False)
    return copy


def _read(store: VectorStore) -> _StoreVectors:
    # Read after the store's row: these chunks are at least as new as the version noted.
    rows = list(VectorStoreChunk.objects.filter(vector_store_id=store.pk).exclude(embedding=None)
                .order_by("pk").values_list("pk", "vector_store_file_id", "embedding"))
    matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=STORED_DTYPE).astype(np.float32)
    return _StoreVectors(version=store.index_version,
                         chunk_ids=np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)),
                         file_ids=np.fromiter((row[1] for row in rows), dtype=np.int64, count=len(rows)),
                         matrix=matrix.reshape(len(rows), -1) if rows else matrix.reshape(0, 0))
