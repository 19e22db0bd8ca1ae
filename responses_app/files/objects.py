"""A stored file as the Files API answers with it."""

from __future__ import annotations

from typing import Any

from responses_app.models import StoredFile


def file_object(file: StoredFile) -> dict[str, Any]:
    """A file of the Files API (StoredFile) as ``client.files`` types it (FileObject)."""
    return {"id": file.pk, "object": "file", "bytes": file.bytes, "created_at": int(file.created_at.timestamp()),
            "filename": file.filename, "purpose": file.purpose, "status": "processed",
            "expires_at": int(file.expires_at.timestamp()) if file.expires_at else None, "status_details": None}
