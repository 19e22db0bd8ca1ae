"""``input_file`` content parts: each is read once, when the request arrives, and its text
(under a line that names the file) kept in the stored part as ``text``, which the wire
leaves out. A later turn's prompt then
reads the same text after the file is deleted or expires, and no worker opens the file."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from django.conf import settings

from responses_app.files import store
from responses_app.files.text import UnreadableFile, file_text
from responses_app.models import Tenant
from responses_app.wire.errors import InvalidRequest, NotFound


def read_input_files(tenant: Tenant, items: list[dict[str, Any]], param: str = "input") -> list[dict[str, Any]]:
    """``items`` with the text of each message's ``input_file`` parts read in. A file of
    another tenant is a 404 like one that never existed."""
    return [_with_file_texts(tenant, item, f"{param}[{index}]") if _has_unread_file(item) else item
            for index, item in enumerate(items)]


def _has_unread_file(item: dict[str, Any]) -> bool:
    content = item.get("content") if item.get("type") == "message" else None
    return isinstance(content, list) and any(
        part.get("type") == "input_file" and "text" not in part for part in content)


def _with_file_texts(tenant: Tenant, item: dict[str, Any], param: str) -> dict[str, Any]:
    content = []
    for index, part in enumerate(item["content"]):
        if part.get("type") == "input_file" and "text" not in part:
            part = {**part, "text": _read(tenant, part, f"{param}.content[{index}]")}
        content.append(part)
    return {**item, "content": content}


def _read(tenant: Tenant, part: dict[str, Any], param: str) -> str:
    if part.get("file_id") is not None:
        filename, data = _stored_bytes(tenant, part["file_id"], f"{param}.file_id")
        filename = part.get("filename") or filename
    else:
        filename, data = part.get("filename") or "file", _decoded(part["file_data"], f"{param}.file_data")
    try:
        # Under the file's name, so that the model can tell files apart and cite them.
        return f"File {filename}:\n{file_text(filename, data)}"
    except UnreadableFile as error:
        raise InvalidRequest(str(error), param=param, code="invalid_file") from None


def _stored_bytes(tenant: Tenant, file_id: str, param: str) -> tuple[str, bytes]:
    try:
        row = store.get_file(tenant, file_id)
    except NotFound:
        raise NotFound(f"No such File object: {file_id}", param=param) from None
    if row.bytes > settings.INPUT_FILE_MAX_BYTES:
        raise InvalidRequest(f"File '{file_id}' is {row.bytes} bytes; an input_file may name a file of at most "
                             f"{settings.INPUT_FILE_MAX_BYTES} bytes.", param=param, code="file_too_large")
    with store.open_content(row) as content:
        return row.filename, content.read()


def _decoded(file_data: str, param: str) -> bytes:
    """A data URL (``data:application/pdf;base64,...``) or bare base64."""
    payload = file_data.partition(",")[2] if file_data.startswith("data:") else file_data
    try:
        return base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequest("'file_data' must be base64, or a data URL of base64 "
                             "('data:<media type>;base64,<data>').", param=param) from None
