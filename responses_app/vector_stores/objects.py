"""A vector store, its files, its file batches and its search results as the Vector Stores
API answers with them. A store and a file batch come with their file counts annotated
(store.py)."""

from __future__ import annotations

from typing import Any


def _file_counts(row: Any) -> dict[str, int]:
    return {"in_progress": row.files_in_progress, "completed": row.files_completed, "failed": row.files_failed,
            "cancelled": row.files_cancelled, "total": row.files_total}


def vector_store_object(store: Any, expires_at: Any, expired: bool) -> dict[str, Any]:
    """A vector store (vector_stores/store.get_vector_store: with its counts) as
    ``client.vector_stores`` types it (VectorStore)."""
    return {
        "id": store.pk, "object": "vector_store", "created_at": int(store.created_at.timestamp()),
        "name": store.name, "description": store.description or None, "usage_bytes": store.usage,
        "file_counts": _file_counts(store),
        "status": "expired" if expired else "in_progress" if store.files_in_progress else "completed",
        "expires_after": ({"anchor": "last_active_at", "days": store.expires_after_days}
                          if store.expires_after_days is not None else None),
        "expires_at": int(expires_at.timestamp()) if expires_at else None,
        "last_active_at": int(store.last_active_at.timestamp()), "metadata": store.metadata or {},
    }


def vector_store_file_object(store_file: Any) -> dict[str, Any]:
    """A file of a vector store as ``client.vector_stores.files`` types it (VectorStoreFile):
    its id is the file's."""
    return {
        "id": store_file.file_id, "object": "vector_store.file", "created_at": int(store_file.created_at.timestamp()),
        "vector_store_id": store_file.vector_store_id, "status": store_file.status,
        "last_error": store_file.last_error, "usage_bytes": store_file.usage_bytes,
        "attributes": store_file.attributes,
        "chunking_strategy": {"type": "static", "static": {
            "max_chunk_size_tokens": store_file.max_chunk_size_tokens,
            "chunk_overlap_tokens": store_file.chunk_overlap_tokens}},
    }


def file_batch_object(batch: Any, status: str) -> dict[str, Any]:
    """A file batch (with its counts) as ``client.vector_stores.file_batches`` types it."""
    return {"id": batch.pk, "object": "vector_store.files_batch", "created_at": int(batch.created_at.timestamp()),
            "vector_store_id": batch.vector_store_id, "status": status, "file_counts": _file_counts(batch)}


def search_result_object(result: Any) -> dict[str, Any]:
    """A search result (vector_stores/search.SearchResult) as VectorStoreSearchResponse."""
    store_file = result.vector_store_file
    return {"file_id": store_file.file_id, "filename": store_file.file.filename, "score": round(result.score, 6),
            "attributes": store_file.attributes, "content": [{"type": "text", "text": result.text}]}
