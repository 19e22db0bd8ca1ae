"""The text a model reads from a file: gpt-oss reads text only, so an ``input_file`` part
is its text, taken once when the request arrives."""

from __future__ import annotations

import io
from pathlib import PurePosixPath

from pypdf import PdfReader


class UnreadableFile(ValueError):
    """The file has no text this server can read; the message says why."""


def file_text(filename: str, data: bytes) -> str:
    """The text of a file: a PDF's extracted text (by page), any other file's UTF-8 text."""
    if data.startswith(b"%PDF-") or PurePosixPath(filename).suffix.lower() == ".pdf":
        return _pdf_text(data)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise UnreadableFile(f"'{filename}' is neither a PDF nor UTF-8 text; gpt-oss reads text only "
                             "(plain text, Markdown, JSON, CSV, source code and PDF text).") from None
    if "\x00" in text:
        raise UnreadableFile(f"'{filename}' holds NUL bytes: it is not a text file.")
    return text


def _pdf_text(data: bytes) -> str:
    try:
        reader = PdfReader(io.BytesIO(data))
        encrypted = reader.is_encrypted
        pages = [] if encrypted else [page.extract_text() or "" for page in reader.pages]
    except Exception as error:  # noqa: BLE001 - pypdf raises many types on a malformed file
        raise UnreadableFile(f"The PDF cannot be read: {error}.") from None
    if encrypted:
        raise UnreadableFile("The PDF is encrypted.")
    return "\n\n".join(text.strip() for text in pages if text.strip())
