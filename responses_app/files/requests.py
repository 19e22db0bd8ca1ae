"""The form of a file upload (POST /v1/files, multipart): which fields it may have, as
the SDK sends them (``expires_after`` flattened to ``expires_after[anchor]`` and
``expires_after[seconds]``)."""

from __future__ import annotations

from typing import Any

from django.http import QueryDict

from responses_app.wire.errors import InvalidRequest

FIELDS = ("purpose", "expires_after[anchor]", "expires_after[seconds]")


def upload_fields(form: QueryDict) -> tuple[str | None, dict[str, Any] | None]:
    """(purpose, expires_after) of the form; any other field is a 400."""
    for name in form:
        if name not in FIELDS:
            raise InvalidRequest(f"Unknown parameter: '{name}'.", param=name, code="unknown_parameter")
    expires_after = None
    if "expires_after[anchor]" in form or "expires_after[seconds]" in form:
        expires_after = {"anchor": form.get("expires_after[anchor]"), "seconds": form.get("expires_after[seconds]")}
    return form.get("purpose"), expires_after


def upload_filename(name: str | None) -> str:
    """The name the file is listed with (only a label: the bytes are stored under its id)."""
    name = (name or "").replace("\x00", "").rsplit("/", 1)[-1].rsplit("\\", 1)[-1]
    return name or "file"


MAX_FILE_IDS = 100


def file_ids_field(value: Any, param: str) -> list[str]:
    """A ``file_ids`` array (of Files API ids), as containers take it; whether each exists
    is the service's to say."""
    if not isinstance(value, list) or not all(isinstance(file_id, str) and file_id for file_id in value):
        raise InvalidRequest(f"Invalid type for '{param}': expected an array of file ids.", param=param,
                             code="invalid_type")
    if len(value) > MAX_FILE_IDS:
        raise InvalidRequest(f"'{param}' may name at most {MAX_FILE_IDS} files.", param=param,
                             code="array_above_max_length")
    return list(dict.fromkeys(value))
