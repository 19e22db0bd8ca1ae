"""Vector stores, their files and file batches (client.vector_stores): every read and write,
scoped to the tenant (another tenant's ids are 404, as ids that never existed), with the
tenant's caps checked before anything is written."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Count, Q, QuerySet, Sum
from django.db.models.functions import Coalesce
from django.utils import timezone

from responses_app.files.store import get_file, open_content
from responses_app.files.text import UnreadableFile, file_text
from responses_app.lib.keyset import created_at_page
from responses_app.models import (
    StoredFile,
    Tenant,
    VectorStore,
    VectorStoreFile,
    VectorStoreFileBatch,
    VectorStoreFileStatus,
)
from responses_app.observability import recorder
from responses_app.vector_stores import indexing, ingest
from responses_app.vector_stores.requests import (
    Attributes,
    ChunkingStrategy,
    FileToAttach,
    SearchRequest,
    VectorStoreCreate,
    VectorStoreUpdate,
)
from responses_app.vector_stores.search import SearchResult, search
from responses_app.wire.errors import InvalidRequest, NotFound, RateLimited, or_not_found
from responses_app.wire.search_options import FileSearchTool, Filter, Ranking

QUOTA_RETRY_AFTER_S = 60
IN_PROGRESS = VectorStoreFileStatus.IN_PROGRESS


# --- stores --------------------------------------------------------------------------------------


def create_vector_store(tenant: Tenant, request: VectorStoreCreate) -> VectorStore:
    with transaction.atomic():
        _lock(tenant)
        if VectorStore.objects.filter(tenant=tenant).count() >= settings.VECTOR_STORE_MAX_STORES:
            raise RateLimited(f"This organization has {settings.VECTOR_STORE_MAX_STORES} vector stores, the most it "
                              "may have (VECTOR_STORE_MAX_STORES): delete one first.",
                              retry_after=QUOTA_RETRY_AFTER_S, code="vector_store_quota_exceeded")
        store = VectorStore.objects.create(tenant=tenant, name=request.name, description=request.description,
                                           metadata=request.metadata, expires_after_days=request.expires_after_days,
                                           embedding_model=settings.VECTOR_STORE_EMBEDDING_MODEL,
                                           chunking_type=request.chunking.type,
                                           max_chunk_size_tokens=request.chunking.max_chunk_size_tokens,
                                           chunk_overlap_tokens=request.chunking.chunk_overlap_tokens)
        _attach(tenant, store, request.files, batch=None)
    return get_vector_store(tenant, store.pk)


def get_vector_store(tenant: Tenant, vector_store_id: str) -> VectorStore:
    """The store, with ``file_counts`` and ``usage_bytes`` as the wire shows them."""
    return or_not_found(_with_counts(VectorStore.objects.filter(tenant=tenant, pk=vector_store_id)).first(),
                        f"No vector store found with id '{vector_store_id}'.", "vector_store_id")


def vector_stores_page(tenant: Tenant, *, after: str | None, before: str | None, limit: int, order: str,
                       ) -> tuple[list[VectorStore], bool]:
    stores = VectorStore.objects.filter(tenant=tenant)
    page, more = created_at_page(stores, after=after, before=before, limit=limit, order=order, missing=_no_cursor)
    counted = {store.pk: store for store in _with_counts(VectorStore.objects.filter(pk__in=[s.pk for s in page]))}
    return [counted[store.pk] for store in page], more


def update_vector_store(tenant: Tenant, vector_store_id: str, update: VectorStoreUpdate) -> VectorStore:
    store = get_vector_store(tenant, vector_store_id)
    if update.fields:
        VectorStore.objects.filter(pk=store.pk).update(**update.fields)
    return get_vector_store(tenant, vector_store_id)


def delete_vector_store(tenant: Tenant, vector_store_id: str) -> None:
    """The store, its files' attachments and its index (the files stay in the Files API)."""
    store = get_vector_store(tenant, vector_store_id)
    store.delete()  # the chunks and terms in a statement each (nothing refers to them)


def search_vector_store(tenant: Tenant, vector_store_id: str, request: SearchRequest) -> list[SearchResult]:
    store = usable_stores(tenant, [vector_store_id], "vector_store_id")[0]
    return _timed_search("api", [store], request.queries, request.filters, request.max_num_results, request.ranking)


def file_search_results(tenant_id: int, tool: FileSearchTool, queries: list[str]) -> list[dict[str, Any]]:
    """What a response's ``file_search`` tool finds for the model's queries, as the
    file_search_call item's ``results``. LookupError: a store was deleted or expired since
    the create."""
    tenant = Tenant.objects.get(pk=tenant_id)
    try:
        stores = usable_stores(tenant, tool.vector_store_ids, "vector_store_ids")
    except (NotFound, InvalidRequest) as error:
        raise LookupError(error.message) from None
    found = _timed_search("file_search", stores, queries, tool.filter, tool.max_num_results, tool.ranking)
    return [{"file_id": result.vector_store_file.file_id, "filename": result.vector_store_file.file.filename,
             "score": round(result.score, 6), "text": result.text, "attributes": result.vector_store_file.attributes}
            for result in found]


def usable_stores(tenant: Tenant, vector_store_ids: Sequence[str], param: str) -> list[VectorStore]:
    """The stores a search may read (404 for one that is not the tenant's, 400 for an
    expired one), each marked as used now (its expiry counts from its last use)."""
    stores = {store.pk: store for store in VectorStore.objects.filter(tenant=tenant, pk__in=vector_store_ids)}
    for store_id in vector_store_ids:
        store = stores.get(store_id)
        if store is None:
            raise NotFound(f"No vector store found with id '{store_id}'.", param=param)
        _check_not_expired(store, param)
    VectorStore.objects.filter(pk__in=list(stores)).update(last_active_at=timezone.now())
    return [stores[store_id] for store_id in vector_store_ids]


def _timed_search(source: str, stores: Sequence[VectorStore], queries: Sequence[str], filter_: Filter | None,
                  max_num_results: int, ranking: Ranking) -> list[SearchResult]:
    """``search``, its time observed for /metrics by where it came from (api, file_search)."""
    started = time.perf_counter()
    results = search(stores, queries, filter_, max_num_results, ranking)
    recorder.vector_store_searched(source, time.perf_counter() - started)
    return results


def _check_not_expired(store: VectorStore, param: str) -> None:
    """An expired store keeps its files but is neither searched nor added to (a 400)."""
    if is_expired(store):
        raise InvalidRequest(f"The vector store '{store.pk}' has expired.", param=param, code="expired")


def expires_at(store: VectorStore) -> Any:
    if store.expires_after_days is None:
        return None
    return store.last_active_at + timedelta(days=store.expires_after_days)


def is_expired(store: VectorStore) -> bool:
    ends = expires_at(store)
    return ends is not None and ends <= timezone.now()


# --- files ---------------------------------------------------------------------------------------


def attach_file(tenant: Tenant, vector_store_id: str, request: FileToAttach) -> VectorStoreFile:
    store = _writable_store(tenant, vector_store_id)
    with transaction.atomic():
        _lock(tenant)
        return _attach(tenant, store, [request], batch=None)[0]


def get_store_file(tenant: Tenant, vector_store_id: str, file_id: str) -> VectorStoreFile:
    return or_not_found(VectorStoreFile.objects.filter(vector_store__tenant=tenant, vector_store_id=vector_store_id,
                                                       file_id=file_id).first(),
                        f"No file found with id '{file_id}' in vector store '{vector_store_id}'.", "file_id")


def store_files_page(tenant: Tenant, vector_store_id: str, *, status: str | None, after: str | None,
                     before: str | None, limit: int, order: str, batch_id: str | None = None,
                     ) -> tuple[list[VectorStoreFile], bool]:
    get_vector_store(tenant, vector_store_id)
    files = VectorStoreFile.objects.filter(vector_store_id=vector_store_id)
    if batch_id is not None:
        files = files.filter(batch_id=get_file_batch(tenant, vector_store_id, batch_id).pk)
    if status is not None:
        if status not in VectorStoreFileStatus.values:
            raise InvalidRequest(f"Invalid value for 'filter': {status!r}. Supported values are: "
                                 f"{', '.join(VectorStoreFileStatus.values)}.", param="filter", code="invalid_value")
        files = files.filter(status=status)
    return created_at_page(files, after=after, before=before, limit=limit, order=order, cursor_field="file_id",
                           missing=_no_cursor)


def update_store_file(tenant: Tenant, vector_store_id: str, file_id: str, attributes: Attributes | None,
                      ) -> VectorStoreFile:
    store_file = get_store_file(tenant, vector_store_id, file_id)
    VectorStoreFile.objects.filter(pk=store_file.pk).update(attributes=attributes)
    store_file.refresh_from_db()
    return store_file


def delete_store_file(tenant: Tenant, vector_store_id: str, file_id: str) -> None:
    """The file out of the store and its index (it stays in the Files API)."""
    detach(get_store_file(tenant, vector_store_id, file_id))


def detach(store_file: VectorStoreFile) -> None:
    with transaction.atomic():
        indexing.remove_chunks(store_file)
        store_file.delete()


def store_file_content(tenant: Tenant, vector_store_id: str, file_id: str) -> str:
    """The text of the file as the store read it."""
    store_file = get_store_file(tenant, vector_store_id, file_id)
    with open_content(store_file.file) as content:
        try:
            return file_text(store_file.file.filename, content.read())
        except UnreadableFile as error:
            raise InvalidRequest(str(error), param="file_id", code="unsupported_file") from None


# --- file batches --------------------------------------------------------------------------------


def create_file_batch(tenant: Tenant, vector_store_id: str, files: list[FileToAttach]) -> VectorStoreFileBatch:
    store = _writable_store(tenant, vector_store_id)
    with transaction.atomic():
        _lock(tenant)
        batch = VectorStoreFileBatch.objects.create(vector_store=store)
        _attach(tenant, store, files, batch=batch)
    return get_file_batch(tenant, vector_store_id, batch.pk)


def get_file_batch(tenant: Tenant, vector_store_id: str, batch_id: str) -> VectorStoreFileBatch:
    """The batch, with ``file_counts`` as the wire shows them."""
    return or_not_found(_with_counts(VectorStoreFileBatch.objects.filter(
        vector_store__tenant=tenant, vector_store_id=vector_store_id, pk=batch_id)).first(),
        f"No file batch found with id '{batch_id}' in vector store '{vector_store_id}'.", "batch_id")


def cancel_file_batch(tenant: Tenant, vector_store_id: str, batch_id: str) -> VectorStoreFileBatch:
    """Its files still in progress are cancelled (a file being indexed right now ends as it
    would have: the flip to completed and the cancel are each one conditional update)."""
    batch = get_file_batch(tenant, vector_store_id, batch_id)
    with transaction.atomic():
        VectorStoreFileBatch.objects.filter(pk=batch.pk, cancelled_at=None).update(cancelled_at=timezone.now())
        VectorStoreFile.objects.filter(batch=batch, status=IN_PROGRESS).update(
            status=VectorStoreFileStatus.CANCELLED)
    return get_file_batch(tenant, vector_store_id, batch_id)


def file_batch_status(batch: VectorStoreFileBatch) -> str:
    if batch.files_in_progress:
        return "in_progress"
    if batch.cancelled_at is not None:
        return "cancelled"
    if batch.files_failed and not batch.files_completed:
        return "failed"
    return "completed"


# --- the writes' common steps --------------------------------------------------------------------


def _attach(tenant: Tenant, store: VectorStore, requests: Sequence[FileToAttach],
            batch: VectorStoreFileBatch | None) -> list[VectorStoreFile]:
    """Attach the files (each of the tenant's, within the caps) in the caller's transaction;
    their ingestion is sent once it commits. A file that cannot be indexed fails alone, with
    its ``last_error``: here when its size says so, at ingestion when its bytes do. A file
    attached again is re-ingested with its new attributes and chunking; a file without a
    chunking of its own is chunked as the store says."""
    files = {request.file_id: get_file(tenant, request.file_id) for request in requests}
    errors = {file_id: error for file_id, file in files.items() if (error := _size_error(file)) is not None}
    _check_quota(tenant, store, [file for file_id, file in files.items() if file_id not in errors])
    attached = []
    for request in requests:
        old = VectorStoreFile.objects.filter(vector_store=store, file_id=request.file_id).first()
        if old is not None:
            detach(old)
        chunking = request.chunking or store_chunking(store)
        error = errors.get(request.file_id)
        attached.append(VectorStoreFile.objects.create(
            vector_store=store, file=files[request.file_id], batch=batch, attributes=request.attributes,
            max_chunk_size_tokens=chunking.max_chunk_size_tokens, chunk_overlap_tokens=chunking.chunk_overlap_tokens,
            chunking_type=chunking.type, last_error=error,
            status=VectorStoreFileStatus.FAILED if error else IN_PROGRESS))
    if attached:
        VectorStore.objects.filter(pk=store.pk).update(last_active_at=timezone.now())
    for store_file in attached:
        if store_file.status == IN_PROGRESS:
            transaction.on_commit(lambda pk=store_file.pk: ingest.send_ingest_task(pk))
    return attached


def store_chunking(store: VectorStore) -> ChunkingStrategy:
    """How the store chunks a file added without a chunking_strategy of its own."""
    return ChunkingStrategy(store.chunking_type, store.max_chunk_size_tokens, store.chunk_overlap_tokens)


def _size_error(file: StoredFile) -> dict[str, str] | None:
    """The ``last_error`` of a file whose size alone says that it cannot be indexed."""
    if file.bytes == 0:
        return {"code": "invalid_file", "message": f"The file '{file.pk}' is empty."}
    if file.bytes > settings.VECTOR_STORE_FILE_MAX_BYTES:
        return {"code": "invalid_file", "message": f"The file '{file.pk}' is {file.bytes} bytes; a vector store "
                f"reads files of at most {settings.VECTOR_STORE_FILE_MAX_BYTES} bytes (VECTOR_STORE_FILE_MAX_BYTES)."}
    return None


def _check_quota(tenant: Tenant, store: VectorStore, files: Sequence[StoredFile]) -> None:
    attached = VectorStoreFile.objects.filter(vector_store__tenant=tenant).exclude(
        vector_store=store, file__in=files)
    count = attached.count() + len(files)
    if count > settings.VECTOR_STORE_MAX_FILES:
        raise RateLimited(f"This organization's vector stores would hold {count} files, more than the "
                          f"{settings.VECTOR_STORE_MAX_FILES} they may (VECTOR_STORE_MAX_FILES).",
                          retry_after=QUOTA_RETRY_AFTER_S, code="vector_store_quota_exceeded")
    # A file still being read counts for its size until its usage is known.
    used = attached.aggregate(used=Coalesce(Sum("usage_bytes", filter=~Q(status=IN_PROGRESS)), 0),
                              reading=Coalesce(Sum("file__bytes", filter=Q(status=IN_PROGRESS)), 0))
    total = used["used"] + used["reading"] + sum(file.bytes for file in files)
    if total > settings.VECTOR_STORE_MAX_BYTES:
        raise RateLimited(f"This organization's vector stores would use {total} bytes, more than the "
                          f"{settings.VECTOR_STORE_MAX_BYTES} they may (VECTOR_STORE_MAX_BYTES).",
                          retry_after=QUOTA_RETRY_AFTER_S, code="vector_store_quota_exceeded")


def _writable_store(tenant: Tenant, vector_store_id: str) -> VectorStore:
    store = get_vector_store(tenant, vector_store_id)
    _check_not_expired(store, "vector_store_id")
    return store


def _lock(tenant: Tenant) -> None:
    # The caps are counted and written in one transaction per tenant at a time (PostgreSQL;
    # SQLite has one writer at a time anyway).
    list(Tenant.objects.select_for_update().filter(pk=tenant.pk).values_list("pk", flat=True))


def _with_counts(rows: QuerySet) -> QuerySet:
    def files(status: str) -> Count:
        return Count("files", filter=Q(files__status=status))

    return rows.annotate(files_in_progress=files(IN_PROGRESS), files_completed=files("completed"),
                         files_failed=files("failed"), files_cancelled=files("cancelled"), files_total=Count("files"),
                         usage=Coalesce(Sum("files__usage_bytes"), 0))


def _no_cursor(cursor: str, param: str) -> InvalidRequest:
    return InvalidRequest(f"No object '{cursor}' to list {param}.", param=param)
