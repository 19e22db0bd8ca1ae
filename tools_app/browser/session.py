"""One response's browsing: the pages the model has seen, numbered by cursor.

The text a BrowserSession returns is laid out like the pages gpt-oss saw in training
(openai/gpt-oss's reference browser), because the model cites and navigates by that
layout: a header `[{cursor}] {title} ({url})`, a scrollbar line
`**viewing lines [{first} - {last}] of {last line}**`, then numbered lines `L{n}: ...`
wrapped at 80 characters, with links shown as `【{id}†{text}†{domain}】` (the domain is
left out for links within the page's own site, as the reference does).

Every display, scrolling included, gets a new cursor: a citation `【{cursor}†L{a}-L{b}】`
then names exactly the view the model read. A session belongs to one response and is
used from one thread at a time.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal
from urllib.parse import quote, unquote, urljoin, urlparse

from tools_app.browser.backends import BackendError, Document, SearchBackend, SearchHit

PageKind = Literal["document", "search", "find"]

LINE_WIDTH = 80
# The reference shows about 1024 tokens when the model does not ask for a number of
# lines; at roughly four characters a token this is the same amount of text.
VIEW_CHARS = 4096
MAX_TOPN = 20
FIND_MAX_RESULTS = 50
FIND_CONTEXT_LINES = 4

# A link as the model sees it: 【id†text】 or 【id†text†domain】.
LINK_MARKER_RE = re.compile(r"【(\d+)†([^†】]+)(?:†([^†】]+))?】")
# Inline Markdown links in a document's text ([text](url), not images) become links.
_MARKDOWN_LINK_RE = re.compile(r"(?<!!)\[([^\[\]\n]+)\]\(\s*([^()\s]+)(?:\s+\"[^\"]*\")?\s*\)")
# Stands in for spaces inside link markers while wrapping, so that a marker is never cut
# in two lines (a cut marker can neither be clicked nor counted by citations).
_NO_BREAK = "\ue000"


class BrowserError(Exception):
    """A browser call the model got wrong, or a backend failure; the message is for the model."""


@dataclass(frozen=True)
class Link:
    """A numbered link on a page: where it leads, its text, and where it appears."""

    url: str
    title: str
    line: int
    # Where to place the view when the link is opened (find results point into a page).
    target_line: int | None = None


@dataclass(frozen=True)
class Page:
    """What one cursor shows: a document, a page of search results, or find results."""

    url: str
    title: str
    lines: tuple[str, ...]
    links: Mapping[int, Link]
    kind: PageKind
    document: Document | None = None


@dataclass(frozen=True)
class BrowserResult:
    """`text` is the tool output the model reads; `action` is the web_search_call action."""

    text: str
    action: dict[str, Any]


@dataclass
class BrowserSession:
    backend: SearchBackend
    _pages: list[Page] = field(default_factory=list)
    _documents: dict[str, Document] = field(default_factory=dict)

    # --- the three functions of the harmony `browser` namespace -------------------------

    def search(self, query: str, topn: int = 10) -> BrowserResult:
        if not query.strip():
            raise BrowserError("`query` must not be empty.")
        if topn < 1:
            raise BrowserError("`topn` must be a positive number.")
        try:
            hits = self.backend.search(query, min(topn, MAX_TOPN))
        except BackendError as error:
            raise BrowserError(f"Error during search for `{query}`: {error}") from error
        page = _search_page(query, hits)
        text = self._show(page, loc=0, num_lines=-1)
        sources = [{"type": "url", "url": hit.url} for hit in hits]
        return BrowserResult(text, {"type": "search", "query": query, "sources": sources})

    def open(self, id: int | str = -1, cursor: int = -1, loc: int = -1, num_lines: int = -1) -> BrowserResult:
        """Open a link of a page (id >= 0), a URL (id a string), or scroll (no id)."""
        if isinstance(id, str):
            page = _document_page(self._fetch(id, fresh=True))
        else:
            current = self._page(cursor)
            if id < 0:
                page = current
            else:
                link = current.links.get(id)
                if link is None:
                    raise BrowserError(f"Invalid link id `{id}`.")
                page = _document_page(self._fetch(link.url, fresh=False))
                if loc < 0 and link.target_line is not None:
                    loc = max(link.target_line - FIND_CONTEXT_LINES, 0)
        text = self._show(page, loc=max(loc, 0), num_lines=num_lines)
        return BrowserResult(text, {"type": "open_page", "url": page.url})

    def find(self, pattern: str, cursor: int = -1) -> BrowserResult:
        if not pattern:
            raise BrowserError("`pattern` must not be empty.")
        page = self._page(cursor)
        if page.kind != "document":
            raise BrowserError("Cannot run `find` on search results page or find results page.")
        text = self._show(_find_page(pattern, page), loc=0, num_lines=-1)
        return BrowserResult(text, {"type": "find_in_page", "url": page.url, "pattern": pattern})

    def invoke(self, function: str, arguments: Mapping[str, Any]) -> BrowserResult:
        """Run `browser.{function}` with the model's JSON arguments, checked first.

        Raises BrowserError, with a message for the model, for an unknown function or bad
        arguments; the session is unchanged then.
        """
        name = function.removeprefix("browser.")
        if name not in _SIGNATURES:
            raise BrowserError(f"Unknown function `browser.{name}`: use `search`, `open` or `find`.")
        if not isinstance(arguments, Mapping):
            raise BrowserError(f"The arguments of `browser.{name}` must be a JSON object.")
        kwargs = _check_arguments(name, arguments)
        method: Callable[..., BrowserResult] = getattr(self, name)
        return method(**kwargs)

    # --- state --------------------------------------------------------------------------

    def page(self, cursor: int) -> Page | None:
        """The page shown under `cursor`, or None when there is no such cursor."""
        return self._pages[cursor] if 0 <= cursor < len(self._pages) else None

    @property
    def pages(self) -> tuple[Page, ...]:
        return tuple(self._pages)

    def _page(self, cursor: int) -> Page:
        if not self._pages:
            raise BrowserError("No pages to access! Run `search` or open a URL first.")
        if cursor == -1:
            return self._pages[-1]
        page = self.page(cursor)
        if page is None:
            raise BrowserError(
                f"Cursor `{cursor}` is out of range. Available cursor indices: [0 - {len(self._pages) - 1}]."
            )
        return page

    def _fetch(self, url: str, *, fresh: bool) -> Document:
        # Following a link to a page already read in this response reuses it; a URL the
        # model types is fetched again, as a browser's address bar would.
        if not fresh and url in self._documents:
            return self._documents[url]
        try:
            document = self.backend.open(url)
        except BackendError as error:
            raise BrowserError(f"Error fetching URL `{url}`: {error}") from error
        if document is None:
            raise BrowserError(f"Error fetching URL `{url}`: the page is not available.")
        self._documents[url] = document
        return document

    def _show(self, page: Page, *, loc: int, num_lines: int) -> str:
        """Give `page` the next cursor and render the view the model reads."""
        total = len(page.lines)
        if loc >= total:
            raise BrowserError(f"Invalid location parameter: `{loc}`. Cannot exceed page maximum of {total - 1}.")
        end = _view_end(page.lines, loc, num_lines)
        self._pages.append(page)
        cursor = len(self._pages) - 1
        header = f"[{cursor}] {page.title}"
        if page.url:
            header += f" ({unquote(page.url)})"
        body = "\n".join(f"L{n}: {page.lines[n]}" for n in range(loc, end))
        return f"{header}\n**viewing lines [{loc} - {end - 1}] of {total - 1}**\n\n{body}"


# --- argument checking ----------------------------------------------------------------

_Kind = Literal["int", "str", "id", "bool"]
# Every argument the harmony browser namespace declares; `source` and `view_source` are
# accepted and ignored (one source, no raw HTML). `top_n` is the reference's alias.
_SIGNATURES: dict[str, dict[str, _Kind]] = {
    "search": {"query": "str", "topn": "int", "top_n": "int", "source": "str"},
    "open": {"id": "id", "cursor": "int", "loc": "int", "num_lines": "int", "view_source": "bool", "source": "str"},
    "find": {"pattern": "str", "cursor": "int"},
}
_REQUIRED = {"search": "query", "find": "pattern"}
_IGNORED = {"source", "view_source"}


def _check_arguments(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    signature = _SIGNATURES[name]
    unknown = sorted(set(arguments) - set(signature))
    if unknown:
        listed = ", ".join(f"`{key}`" for key in unknown)
        raise BrowserError(f"Unknown argument {listed} for `browser.{name}`; it takes {', '.join(signature)}.")
    required = _REQUIRED.get(name)
    if required and arguments.get(required) is None:
        raise BrowserError(f"`browser.{name}` needs `{required}`.")
    kwargs: dict[str, Any] = {}
    for key, value in arguments.items():
        if value is None:
            continue
        checked = _check_value(name, key, signature[key], value)
        if key not in _IGNORED:
            kwargs["topn" if key == "top_n" else key] = checked
    return kwargs


def _check_value(name: str, key: str, kind: _Kind, value: Any) -> Any:
    where = f"`{key}` of `browser.{name}`"
    if kind == "bool":
        if not isinstance(value, bool):
            raise BrowserError(f"{where} must be true or false.")
        return value
    if kind == "str":
        if not isinstance(value, str):
            raise BrowserError(f"{where} must be a string.")
        return value
    if kind == "id" and isinstance(value, str):
        # A number written as a string is a link id: no URL is only digits.
        return int(value) if value.strip().lstrip("-").isdigit() else value
    # The namespace declares these as JSON numbers, so 3.0 is as good as 3.
    if isinstance(value, bool) or not isinstance(value, int | float) or not float(value).is_integer():
        expected = "an integer or a URL string" if kind == "id" else "an integer"
        raise BrowserError(f"{where} must be {expected}.")
    return int(value)


# --- building pages -------------------------------------------------------------------


def _clean(text: str) -> str:
    # 【 and 】 belong to link markers and citations: a document must not be able to forge
    # either, so its own are swapped for look-alikes (as the reference does).
    return (
        text.replace("【", "〖").replace("】", "〗").replace("\u200b", "").replace(_NO_BREAK, "").replace("\r\n", "\n")
    ).replace("\r", "\n")


def _single_line(text: str) -> str:
    return " ".join(text.split())


def domain_of(url: str) -> str:
    return urlparse(url).netloc


def _marker(link_id: int, text: str, url: str, page_domain: str) -> str:
    text = _single_line(text).replace("†", "‡") or url
    domain = domain_of(url)
    if domain and domain != page_domain:
        return f"【{link_id}†{text}†{domain}】"
    return f"【{link_id}†{text}】"


def _wrap(text: str) -> list[str]:
    protected = LINK_MARKER_RE.sub(lambda match: match.group(0).replace(" ", _NO_BREAK), text)
    lines: list[str] = []
    for raw in protected.split("\n"):
        raw = raw.rstrip()
        wrapped = textwrap.wrap(
            raw,
            width=LINE_WIDTH,
            expand_tabs=False,
            replace_whitespace=False,
            drop_whitespace=False,
            break_long_words=False,
            break_on_hyphens=False,
        )
        lines.extend(wrapped or [""])
    return [line.replace(_NO_BREAK, " ") for line in lines]


def _links_on(lines: tuple[str, ...], urls: Mapping[int, tuple[str, str]]) -> dict[int, Link]:
    """The Link of every marker in `lines`, given each link id's (url, title)."""
    links: dict[int, Link] = {}
    for number, line in enumerate(lines):
        for match in LINK_MARKER_RE.finditer(line):
            link_id = int(match.group(1))
            if link_id in urls and link_id not in links:
                url, title = urls[link_id]
                links[link_id] = Link(url=url, title=title, line=number)
    return links


def _document_page(document: Document) -> Page:
    page_domain = domain_of(document.url)
    urls: dict[int, tuple[str, str]] = {}
    ids: dict[str, int] = {}

    def linkify(match: re.Match[str]) -> str:
        label, href = match.group(1), match.group(2)
        if href.startswith(("#", "mailto:", "javascript:")):
            return label
        url = urljoin(document.url, href)
        if url not in ids:
            ids[url] = len(ids)
            urls[ids[url]] = (url, _single_line(label))
        return _marker(ids[url], label, url, page_domain)

    body = _MARKDOWN_LINK_RE.sub(linkify, _clean(document.text))
    body = re.sub(r"\n\s*\n(\s*\n)+", "\n\n", body).strip("\n")
    lines = tuple(_wrap(f"\nURL: {document.url}\n{body}"))
    links = _links_on(lines, urls)
    return Page(
        url=document.url,
        title=_single_line(_clean(document.title)) or page_domain or document.url,
        lines=lines,
        links=links,
        kind="document",
        document=document,
    )


def _search_page(query: str, hits: list[SearchHit]) -> Page:
    urls: dict[int, tuple[str, str]] = {}
    entries: list[str] = []
    for hit in hits:
        link_id = len(urls)
        title = _single_line(_clean(hit.title)) or hit.url
        urls[link_id] = (hit.url, title)
        entries.append(f"  * {_marker(link_id, title, hit.url, '')} {_single_line(_clean(hit.snippet))}".rstrip())
    listing = "\n".join(entries) if entries else f"No results found for `{_single_line(_clean(query))}`."
    lines = tuple(_wrap(f"# Search Results\n\n{listing}"))
    links = _links_on(lines, urls)
    title = _single_line(_clean(query))
    return Page(url=f"search:{quote(query)}", title=title, lines=lines, links=links, kind="search")


def _find_page(pattern: str, page: Page) -> Page:
    # Matches are read in the text without link markup, as a reader sees it.
    plain = [LINK_MARKER_RE.sub(lambda match: match.group(2), line) for line in page.lines]
    needle = pattern.lower()
    chunks: list[str] = []
    targets: list[int] = []
    number = 0
    while number < len(plain) and len(chunks) < FIND_MAX_RESULTS:
        if needle not in plain[number].lower():
            number += 1
            continue
        shown = "\n".join(plain[number : number + FIND_CONTEXT_LINES])
        chunks.append(f"# 【{len(chunks)}†match at L{number}】\n{shown}")
        targets.append(number)
        number += FIND_CONTEXT_LINES
    text = "\n\n".join(chunks) if chunks else f"No `find` results for pattern: `{_single_line(_clean(pattern))}`"
    lines = tuple(_wrap(text))
    found = _links_on(lines, {link_id: (page.url, page.title) for link_id in range(len(targets))})
    links = {link_id: replace(link, target_line=targets[link_id]) for link_id, link in found.items()}
    return Page(
        url=f"{page.url}/find?pattern={quote(pattern)}",
        title=f"Find results for text: `{_single_line(pattern)}` in `{page.title}`",
        lines=lines,
        links=links,
        kind="find",
        document=page.document,
    )


def _view_end(lines: tuple[str, ...], loc: int, num_lines: int) -> int:
    """One past the last line to show from `loc`: `num_lines` of them, or about VIEW_CHARS."""
    if num_lines > 0:
        return min(loc + num_lines, len(lines))
    used = 0
    end = loc
    while end < len(lines):
        used += len(lines[end]) + len(f"L{end}: \n")
        if used > VIEW_CHARS and end > loc:
            break
        end += 1
    return end
