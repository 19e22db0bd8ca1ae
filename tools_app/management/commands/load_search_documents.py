"""`manage.py load_search_documents PATH [PATH ...]`: fill web_search's local index.

Reads `.jsonl` files (one {"url", "title", "text"} object per line) and `.md`, `.txt`,
`.html`/`.htm` files (directories are walked). Bad lines and unreadable files are
reported and skipped; the command fails only when nothing at all could be loaded.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from tools_app.browser.backends import Document
from tools_app.browser.local_index import LocalIndex

TEXT_SUFFIXES = {".md", ".txt", ".html", ".htm"}
SUFFIXES = TEXT_SUFFIXES | {".jsonl"}


class Command(BaseCommand):
    help = "Load documents into the local web_search index (settings.WEB_SEARCH_INDEX_PATH)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths", nargs="+", type=Path, metavar="PATH", help=".jsonl, .md, .txt or .html files, or folders of them"
        )
        parser.add_argument("--clear", action="store_true", help="remove every document from the index first")
        parser.add_argument("--index", type=Path, default=None, help="the index file (default: WEB_SEARCH_INDEX_PATH)")
        parser.add_argument(
            "--base-url",
            default="",
            help="URL prefix for .md/.txt/.html files, joined with their path relative to PATH "
            "(default: their file:// URL)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        index = LocalIndex(options["index"] or settings.WEB_SEARCH_INDEX_PATH)
        documents: list[Document] = []
        problems = 0
        for root in options["paths"]:
            for document_or_problem in _read(root, options["base_url"]):
                if isinstance(document_or_problem, Document):
                    documents.append(document_or_problem)
                else:
                    problems += 1
                    self.stderr.write(document_or_problem)
        if not documents:
            raise CommandError(f"No documents loaded ({problems} problems reported above).")
        if options["clear"]:
            index.clear()
        loaded = index.add(documents)
        skipped = f", skipped {problems} bad entries" if problems else ""
        self.stdout.write(f"Indexed {loaded} documents into {index.path}{skipped}; the index holds {index.count()}.")


def _read(root: Path, base_url: str) -> Iterator[Document | str]:
    """Documents under `root`, and a `where: what` line for every problem."""
    if root.is_dir():
        files = sorted(path for path in root.rglob("*") if path.is_file() and path.suffix.lower() in SUFFIXES)
        relative_to = root
    elif root.is_file():
        files, relative_to = [root], root.parent
    else:
        yield f"{root}: no such file or folder"
        return
    for path in files:
        suffix = path.suffix.lower()
        try:
            content = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            yield f"{path}: cannot read ({error})"
            continue
        if suffix == ".jsonl":
            yield from _jsonl_documents(path, content)
        elif suffix in TEXT_SUFFIXES:
            url = _file_url(path, relative_to, base_url)
            is_html = suffix in {".html", ".htm"}
            yield _html_document(url, path, content) if is_html else _text_document(url, path, content)
        else:
            yield f"{path}: unsupported file type (use .jsonl, .md, .txt or .html)"


def _jsonl_documents(path: Path, content: str) -> Iterator[Document | str]:
    for number, line in enumerate(content.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as error:
            yield f"{path}:{number}: not JSON ({error.msg})"
            continue
        if not isinstance(record, dict):
            yield f"{path}:{number}: expected an object with url, title and text"
            continue
        url, title, text = record.get("url"), record.get("title", ""), record.get("text")
        if not isinstance(url, str) or not url.strip():
            yield f"{path}:{number}: `url` must be a non-empty string"
        elif not isinstance(text, str) or not text.strip():
            yield f"{path}:{number}: `text` must be a non-empty string"
        elif not isinstance(title, str):
            yield f"{path}:{number}: `title` must be a string"
        else:
            yield Document(url=url.strip(), title=title.strip() or url.strip(), text=text)


def _file_url(path: Path, relative_to: Path, base_url: str) -> str:
    if not base_url:
        return path.resolve().as_uri()
    relative = path.relative_to(relative_to).as_posix()
    return urljoin(base_url if base_url.endswith("/") else base_url + "/", quote(relative))


_HEADING_RE = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


def _text_document(url: str, path: Path, content: str) -> Document:
    heading = _HEADING_RE.search(content) if path.suffix.lower() == ".md" else None
    title = heading.group(1) if heading else path.stem
    return Document(url=url, title=title, text=content)


def _html_document(url: str, path: Path, content: str) -> Document:
    reader = _HtmlText(url)
    reader.feed(content)
    reader.close()
    return Document(url=url, title=reader.title or reader.first_heading or path.stem, text=reader.text())


class _HtmlText(HTMLParser):
    """HTML reduced to readable text: blocks become lines, headings `#`, list items `*`,
    and links Markdown links (which the browser turns into numbered links)."""

    _SKIP = {"script", "style", "noscript", "template", "svg", "head"}
    _BLOCKS = {
        "p", "div", "section", "article", "main", "header", "footer", "nav", "aside", "br", "hr", "tr",
        "table", "ul", "ol", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "figure",
    }  # fmt: skip

    def __init__(self, url: str) -> None:
        super().__init__(convert_charrefs=True)
        self.url = url
        self.title = ""
        self.first_heading = ""
        self._parts: list[str] = []
        self._skipping = 0
        self._in_title = False
        self._heading: list[str] | None = None
        self._link: tuple[str, list[str]] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in self._SKIP:
            self._skipping += 1
        if tag == "title":
            self._in_title = True
        if tag in self._BLOCKS:
            self._parts.append("\n")
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6"}:
            self._parts.append("#" * int(tag[1]) + " ")
            self._heading = []
        elif tag == "li":
            self._parts.append("* ")
        elif tag == "a":
            href = dict(attrs).get("href")
            if href and not href.startswith(("#", "javascript:", "mailto:")):
                self._link = (urljoin(self.url, href), [])

    def handle_endtag(self, tag: str) -> None:
        if tag in self._SKIP and self._skipping:
            self._skipping -= 1
        if tag == "title":
            self._in_title = False
        if tag == "a" and self._link is not None:
            href, words = self._link
            self._link = None
            label = " ".join(" ".join(words).split())
            self._parts.append(f"[{label}]({href})" if label else "")
        if tag in {"h1", "h2", "h3", "h4", "h5", "h6"} and self._heading is not None:
            if not self.first_heading:
                self.first_heading = " ".join(" ".join(self._heading).split())
            self._heading = None
        if tag in self._BLOCKS and tag != "li":  # consecutive items stay on consecutive lines
            self._parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title = (self.title + " " + " ".join(data.split())).strip()
            return
        if self._skipping:
            return
        if self._heading is not None:
            self._heading.append(data)
        if self._link is not None:
            self._link[1].append(data)
        else:
            # Whitespace is collapsed line by line in text(); newlines in the source mean nothing.
            self._parts.append(data.replace("\n", " "))

    def text(self) -> str:
        lines = (" ".join(line.split()) for line in "".join(self._parts).split("\n"))
        return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()
