"""Files: upload, list, read, delete and the purge of expired ones (client.files).

The bytes go to the ``files`` storage (settings.STORAGES) under ``<tenant id>/<file id>``,
never under a name the client chose; the row is written only once they are stored, and a
row that cannot be written takes its stored object with it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.files import File
from django.core.files.storage import Storage, storages
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from responses_app.lib.keyset import created_at_page
from responses_app.models import UPLOAD_PURPOSES, FilePurpose, StoredFile, Tenant
from responses_app.wire.errors import InvalidRequest, invalid_type, or_not_found

MIN_EXPIRY_S = 3600
MAX_EXPIRY_S = 30 * 86400
MAX_FILENAME = 255


def file_storage() -> Storage:
    return storages["files"]


def create_file(tenant: Tenant, upload: File, filename: str, purpose: Any, expires_after: dict[str, Any] | None,
                ) -> StoredFile:
    """Store an uploaded file (its ``size`` known, its chunks readable again)."""
    purpose = _purpose(purpose)
    expires_in = _expires_in(expires_after, purpose)
    _check_size(upload, purpose)
    return _save(tenant, upload, filename, purpose, expires_in)


def create_output_file(tenant: Tenant, content: File, expires_in: int | None) -> StoredFile:
    """Store a file the server wrote for the tenant (a batch's output): purpose batch_output."""
    return _save(tenant, content, content.name, FilePurpose.BATCH_OUTPUT, expires_in)


def _save(tenant: Tenant, upload: File, filename: str, purpose: str, expires_in: int | None) -> StoredFile:
    row = StoredFile(tenant=tenant, filename=filename[:MAX_FILENAME] or "file", purpose=purpose, bytes=upload.size)
    row.storage_name = file_storage().save(f"{tenant.pk}/{row.pk}", upload)
    if expires_in is not None:
        row.expires_at = row.created_at + timedelta(seconds=expires_in)
    try:
        row.save(force_insert=True)
    except BaseException:
        file_storage().delete(row.storage_name)
        raise
    return row


def get_file(tenant: Tenant, file_id: str) -> StoredFile:
    return or_not_found(_live(tenant).filter(pk=file_id).first(), f"No such File object: {file_id}", "file_id")


def open_file(tenant: Tenant, file_id: str) -> tuple[StoredFile, File]:
    """The file's row and its bytes, open for reading."""
    row = get_file(tenant, file_id)
    return row, open_content(row)


def open_content(row: StoredFile) -> File:
    """The bytes of a file whose row is in hand, open for reading."""
    return file_storage().open(row.storage_name, "rb")


def delete_file(tenant: Tenant, file_id: str) -> None:
    delete_row(get_file(tenant, file_id))


def files_page(tenant: Tenant, *, purpose: str | None, after: str | None, limit: int, order: str,
               ) -> tuple[list[StoredFile], bool]:
    """A page of the tenant's files, by upload time (then id), ``order`` asc or desc."""
    files = _live(tenant)
    if purpose is not None:
        files = files.filter(purpose=purpose)
    return created_at_page(files, after=after, limit=limit, order=order, cursors=_live(tenant),
                           missing=lambda cursor, param: InvalidRequest(f"No file '{cursor}' to list after.",
                                                                        param=param))


def purge_expired() -> int:
    """Delete the files whose expires_at has passed (beat, every FILE_PURGE_INTERVAL_S)."""
    expired = list(StoredFile.objects.filter(expires_at__lte=timezone.now()))
    for row in expired:
        delete_row(row)
    return len(expired)


def delete_row(row: StoredFile) -> None:
    """The row, then (once that committed) its bytes: a failed delete leaves both."""
    with transaction.atomic():
        StoredFile.objects.filter(pk=row.pk).delete()
        transaction.on_commit(lambda: file_storage().delete(row.storage_name))


def _live(tenant: Tenant) -> QuerySet[StoredFile]:
    # An expired file is gone for the client at once, whenever the purge comes by.
    return StoredFile.objects.filter(tenant=tenant).exclude(expires_at__lte=timezone.now())


def _purpose(value: Any) -> str:
    if value is None:
        raise InvalidRequest("Missing required parameter: 'purpose'.", param="purpose",
                             code="missing_required_parameter")
    if value not in UPLOAD_PURPOSES:
        raise InvalidRequest(f"Invalid value for 'purpose': {value!r}. Supported values are: "
                             f"{', '.join(sorted(UPLOAD_PURPOSES))}.", param="purpose", code="invalid_value")
    return value


def _expires_in(expires_after: dict[str, Any] | None, purpose: str) -> int | None:
    """Seconds from the upload to the file's expiry, or None (kept until deleted)."""
    if expires_after is None:
        return settings.BATCH_FILE_DEFAULT_EXPIRY_S if purpose == FilePurpose.BATCH else None
    if expires_after.get("anchor") != "created_at":
        raise InvalidRequest(f"Invalid value for 'expires_after.anchor': {expires_after.get('anchor')!r}; the "
                             "supported anchor is 'created_at'.", param="expires_after.anchor", code="invalid_value")
    value: Any = expires_after.get("seconds")  # int() refuses None as any other non-number
    try:
        seconds = int(value)
    except (TypeError, ValueError):
        raise invalid_type("expires_after.seconds", "an integer", value) from None
    if not MIN_EXPIRY_S <= seconds <= MAX_EXPIRY_S:
        raise InvalidRequest(f"'expires_after.seconds' must be between {MIN_EXPIRY_S} and {MAX_EXPIRY_S}.",
                             param="expires_after.seconds", code="invalid_value")
    return seconds


def _check_size(upload: File, purpose: str) -> None:
    if not upload.size:
        # As OpenAI: an empty file is good for nothing (a store cannot index it, a batch has no line).
        raise InvalidRequest("File is empty.", param="file", code="empty_file")
    cap = settings.BATCH_FILE_MAX_BYTES if purpose == FilePurpose.BATCH else settings.FILE_MAX_BYTES
    if upload.size > cap:
        raise InvalidRequest(f"The file is {upload.size} bytes; the most a file with purpose '{purpose}' may have "
                             f"is {cap}.", param="file", code="file_too_large")
    if purpose == FilePurpose.BATCH:
        lines, last = 0, b"\n"
        for chunk in upload.chunks():
            lines, last = lines + chunk.count(b"\n"), chunk[-1:] or last
        lines += last != b"\n"  # a last line without its newline
        if lines > settings.BATCH_FILE_MAX_LINES:
            raise InvalidRequest(f"The file has {lines} lines; a batch input file may have at most "
                                 f"{settings.BATCH_FILE_MAX_LINES}.", param="file", code="file_too_large")
