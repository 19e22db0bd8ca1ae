"""Ingestion, a job on the Celery queue (settings.VECTOR_STORE_QUEUE, which GPU nodes do not
consume, so that it never delays a response): a vector store file's text read, cut into
chunks, analyzed (and embedded, where the store has an embedding model), and indexed in the
one transaction that marks it ``completed``.

A worker killed midway leaves the file ``in_progress`` with nothing indexed; beat's sweep
sends it again once it has shown no progress for VECTOR_STORE_INGEST_STALL_S, and fails it
once it was started VECTOR_STORE_INGEST_MAX_ATTEMPTS times (waiting in the queue is no
attempt). A file cancelled or deleted meanwhile is left as it is."""

from __future__ import annotations

import logging
import time
from datetime import datetime, timedelta

import numpy as np
from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from responses_app.embeddings.registry import embedding_model, is_served
from responses_app.files.store import open_content
from responses_app.files.text import UnreadableFile, file_text
from responses_app.models import VectorStoreFile, VectorStoreFileStatus
from responses_app.vector_stores import indexing
from responses_app.vector_stores.analysis import terms
from responses_app.vector_stores.chunking import chunks

log = logging.getLogger(__name__)
INGEST_TASK = "responses_app.tasks.ingest_vector_store_file"
HEARTBEAT_S = 5.0


class IngestFailed(Exception):
    """The file cannot be indexed: ``code`` as a vector store file's last_error says it."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def send_ingest_task(store_file_id: int) -> None:
    """Ask a worker to ingest the file; if the broker is down, beat's sweep sends it later."""
    try:
        current_app.send_task(INGEST_TASK, args=[store_file_id], queue=settings.VECTOR_STORE_QUEUE)
    except Exception:  # noqa: BLE001 - any broker failure; the sweep covers it
        log.warning("vector store file %s: ingestion not sent; beat's sweep will send it", store_file_id)


def ingest(store_file_id: int) -> None:
    """Index the file, or fail it with the reason; nothing for a file no longer in progress."""
    if not _start(store_file_id):
        return
    store_file = (VectorStoreFile.objects.select_related("file", "vector_store")
                  .filter(pk=store_file_id, status=VectorStoreFileStatus.IN_PROGRESS).first())
    if store_file is None:
        return
    try:
        pieces = _analyzed_chunks(store_file)
    except IngestFailed as failure:
        _fail(store_file, failure.code, str(failure))
        return
    vectors = _embedded(store_file, pieces)
    usage = sum(len(text.encode()) for text, _ in pieces)
    _beat(store_file.pk)  # embedding took time too; from the flip on, the row's lock says it is read
    with transaction.atomic():
        # The flip first: a cancel or a second ingestion that got there before finds nothing
        # to do, and this transaction writes no chunk.
        if not VectorStoreFile.objects.filter(pk=store_file.pk, status=VectorStoreFileStatus.IN_PROGRESS).update(
                status=VectorStoreFileStatus.COMPLETED, usage_bytes=usage, last_error=None):
            return
        indexing.add_chunks(store_file, pieces, vectors)


def _start(store_file_id: int) -> bool:
    """Take the file: one start more, unless a worker is reading it now (its last sign of
    life is fresh: this message is a duplicate, sent again while the file waited)."""
    return bool(VectorStoreFile.objects.filter(_unread(_stale()), pk=store_file_id,
                                               status=VectorStoreFileStatus.IN_PROGRESS).update(
        ingest_attempts=F("ingest_attempts") + 1, ingest_beat_at=timezone.now()))


def _beat(store_file_id: int) -> None:
    """A sign of life of the worker reading the file."""
    VectorStoreFile.objects.filter(pk=store_file_id).update(ingest_beat_at=timezone.now())


def _stale() -> datetime:
    """A sign of life (or a task sent) before this is too old to count."""
    return timezone.now() - timedelta(seconds=settings.VECTOR_STORE_INGEST_STALL_S)


def _unread(stale: datetime) -> Q:
    """The files no worker is reading: none has started them, or shown life since ``stale``."""
    return Q(ingest_beat_at=None) | Q(ingest_beat_at__lt=stale)


def sweep_stalled() -> int:
    """Send again each file whose task was sent more than VECTOR_STORE_INGEST_STALL_S ago
    and that no worker is reading (a lost message, a worker lost while reading it, or a long
    queue: a duplicate costs a query); fail those that were started
    VECTOR_STORE_INGEST_MAX_ATTEMPTS times and stalled. Returns how many it sent or failed."""
    stale = _stale()
    with transaction.atomic():
        # A file whose index is being written is locked by that transaction (its flip to
        # completed): skipped, not waited for, so that a sweep never holds a worker's thread
        # behind another file's commit (PostgreSQL; SQLite has no row locks).
        stalled = list(VectorStoreFile.objects.select_for_update(skip_locked=True)
                       .filter(_unread(stale), status=VectorStoreFileStatus.IN_PROGRESS, ingest_sent_at__lt=stale)
                       .only("pk", "ingest_attempts", "ingest_sent_at")[:1000])
    handled = 0
    for store_file in stalled:
        if store_file.ingest_attempts >= settings.VECTOR_STORE_INGEST_MAX_ATTEMPTS:
            _fail(store_file, "server_error", f"Ingestion stopped unexpectedly {store_file.ingest_attempts} times "
                                              "(VECTOR_STORE_INGEST_MAX_ATTEMPTS).")
        elif VectorStoreFile.objects.filter(pk=store_file.pk, ingest_sent_at=store_file.ingest_sent_at).update(
                ingest_sent_at=timezone.now()):
            send_ingest_task(store_file.pk)
        handled += 1
    return handled


def _analyzed_chunks(store_file: VectorStoreFile) -> list[tuple[str, list[str]]]:
    with open_content(store_file.file) as content:
        data = content.read()
    try:
        text = file_text(store_file.file.filename, data)
    except UnreadableFile as error:
        raise IngestFailed("unsupported_file", str(error)) from None
    pieces, beat = [], time.monotonic()
    heartbeat_s = min(HEARTBEAT_S, settings.VECTOR_STORE_INGEST_STALL_S / 4)
    for piece in chunks(text, store_file.max_chunk_size_tokens, store_file.chunk_overlap_tokens):
        pieces.append((piece, terms(piece)))
        if time.monotonic() - beat > heartbeat_s:  # a long file is not a stalled one
            _beat(store_file.pk)
            beat = time.monotonic()
    if not any(chunk_terms for _, chunk_terms in pieces):
        raise IngestFailed("invalid_file", f"'{store_file.file.filename}' has no words to index.")
    return pieces


def _embedded(store_file: VectorStoreFile, pieces: list[tuple[str, list[str]]]) -> np.ndarray | None:
    """The chunks' unit vectors by the store's embedding model; None without one (or when
    the registry no longer serves it: the store's search is then lexical)."""
    model_id = store_file.vector_store.embedding_model
    if not model_id:
        return None
    if not is_served(model_id):
        log.warning("vector store %s: its embedding model %r is not in EMBEDDING_MODELS; file %s indexed "
                    "without vectors", store_file.vector_store_id, model_id, store_file.file_id)
        return None
    return embedding_model(model_id).embed([text for text, _ in pieces])


def _fail(store_file: VectorStoreFile, code: str, message: str) -> None:
    VectorStoreFile.objects.filter(pk=store_file.pk, status=VectorStoreFileStatus.IN_PROGRESS).update(
        status=VectorStoreFileStatus.FAILED, last_error={"code": code, "message": message})
