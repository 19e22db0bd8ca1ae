"""Where the browser tool gets its pages: the contract every search backend meets.

A backend answers two questions: which documents match a query, and what is the text
of one URL. Everything about how pages look to the model (cursors, line numbers, link
ids) lives in `session.py`; a backend only returns plain data.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class SearchHit:
    """One search result: where it is, what it is called, and a short excerpt."""

    url: str
    title: str
    snippet: str


@dataclass(frozen=True)
class Document:
    """The full plain text of one page, as the browser will number it into lines."""

    url: str
    title: str
    text: str


class BackendError(Exception):
    """A backend failed in a way the model should hear about.

    The message is shown to the model as the tool's output, so it must be a sentence a
    model can act on ("the search service timed out"), never a traceback or a secret.
    """


@runtime_checkable
class SearchBackend(Protocol):
    def search(self, query: str, topn: int) -> list[SearchHit]:
        """At most `topn` hits, best first. Raises BackendError on failure."""
        ...

    def open(self, url: str) -> Document | None:
        """The document at `url`, or None when this backend does not know it.

        Raises BackendError when the backend itself fails (as opposed to not knowing).
        """
        ...
