"""The text a model reads from a file: gpt-oss reads text only, so an ``input_file`` part
is its text, taken once when the request arrives."""

from __future__ import annotations

from pathlib import PurePosixPath

import pypdfium2


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
    # PDFium (Chromium's reader) opens what browsers open: a file with a broken or missing
    # cross-reference table, which stricter parsers refuse.
    try:
        document = pypdfium2.PdfDocument(data)
    except pypdfium2.PdfiumError as error:
        reason = "it is encrypted" if "password" in str(error).lower() else str(error).rstrip(".")
        raise UnreadableFile(f"The PDF cannot be read: {reason}.") from None
    try:
        pages = [_page_text(document, number) for number in range(len(document))]
    finally:
        document.close()
    return "\n\n".join(text.strip() for text in pages if text.strip())


def _page_text(document: pypdfium2.PdfDocument, number: int) -> str:
    page = document[number]
    try:
        text_page = page.get_textpage()
        try:
            return text_page.get_text_bounded().replace("\r\n", "\n")
        finally:
            text_page.close()
    finally:
        page.close()
