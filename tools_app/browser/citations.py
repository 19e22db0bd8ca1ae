"""Turn the model's `【{cursor}†L{a}-L{b}】` citations into url_citation annotations.

The final text has already been streamed with its markers, so the markers stay in the
text and each annotation covers its marker: start_index and end_index (exclusive) are
positions in the Python string.
"""

from __future__ import annotations

import re
from typing import Any

from tools_app.browser.session import BrowserSession, Page

CITATION_RE = re.compile(r"【(\d+)†L(\d+)(?:-L(\d+))?】")


def url_citations(text: str, session: BrowserSession) -> list[dict[str, Any]]:
    """One url_citation per marker whose cursor is a page of `session`, in text order.

    Markers naming a cursor the session never showed are left unannotated.
    """
    annotations: list[dict[str, Any]] = []
    for match in CITATION_RE.finditer(text):
        page = session.page(int(match.group(1)))
        if page is None:
            continue
        first = int(match.group(2))
        last = int(match.group(3)) if match.group(3) is not None else first
        url, title = cited_source(page, min(first, last), max(first, last))
        annotations.append(
            {"type": "url_citation", "start_index": match.start(), "end_index": match.end(), "url": url, "title": title}
        )
    return annotations


def cited_source(page: Page, first: int, last: int) -> tuple[str, str]:
    """The (url, title) a reader should follow for lines first..last of `page`.

    A document is its own source. On a page of search or find results the reader wants
    the page the cited lines describe, not the listing: when the cited lines belong to
    the entry of exactly one link (an entry runs from its link's line to the next
    entry), that link's target is the source; otherwise the listing page itself. Find
    results all point into one page, so that page is their source whatever is cited.
    """
    if page.kind == "document" or not page.links:
        return page.url, page.title
    starts = sorted({link.line for link in page.links.values()})
    cited: dict[str, str] = {}
    for link in page.links.values():
        later = [line for line in starts if line > link.line]
        entry_end = later[0] - 1 if later else len(page.lines) - 1
        if link.line <= last and first <= entry_end:
            cited.setdefault(link.url, link.title)
    if len(cited) == 1:
        [(url, title)] = cited.items()
        return url, title
    if page.kind == "find":
        link = next(iter(page.links.values()))
        return link.url, link.title
    return page.url, page.title
