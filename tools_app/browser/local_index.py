"""A search index in one SQLite file, full-text searched with FTS5.

This is web_search's default backend: operators fill it with
`manage.py load_search_documents`, and responses search it without any network.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path

from tools_app.browser.backends import BackendError, Document, SearchHit

_SCHEMA = """
CREATE TABLE IF NOT EXISTS documents (
    id INTEGER PRIMARY KEY,
    url TEXT NOT NULL UNIQUE,
    title TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE VIRTUAL TABLE IF NOT EXISTS documents_fts USING fts5(
    title, text,
    content='documents', content_rowid='id',
    tokenize='porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
END;
CREATE TRIGGER IF NOT EXISTS documents_au AFTER UPDATE ON documents BEGIN
    INSERT INTO documents_fts(documents_fts, rowid, title, text) VALUES ('delete', old.id, old.title, old.text);
    INSERT INTO documents_fts(rowid, title, text) VALUES (new.id, new.title, new.text);
END;
"""

# A hit in the title says more about a document than one in its body.
_TITLE_WEIGHT = 5.0
_SNIPPET_TOKENS = 32
# Bounds the FTS expression a single (possibly model-written) query can build.
_MAX_TERMS = 32
# Words as FTS5's unicode61 tokenizer sees them: letters and digits. Everything else in a
# query (quotes, parentheses, AND/OR/NOT/NEAR, `*`, `^`, `:`) is FTS syntax we never pass on.
_TERM_RE = re.compile(r"[^\W_]+")
_FTS_OPERATORS = {"AND", "OR", "NOT", "NEAR"}


def _match_expression(terms: list[str], conjunction: str) -> str:
    # Each term is a quoted FTS5 string: inside quotes nothing is an operator.
    return f" {conjunction} ".join(f'"{term}"' for term in terms)


def query_terms(query: str) -> list[str]:
    """The words of `query` that the index can match, in order, without duplicates."""
    seen: dict[str, None] = {}
    for term in _TERM_RE.findall(query):
        if term.upper() in _FTS_OPERATORS and term.isupper():
            # A user's bare `AND`/`OR` means the operator, which we do not support: drop it.
            continue
        seen.setdefault(term.lower(), None)
    return list(seen)[:_MAX_TERMS]


class LocalIndex:
    """Documents in one SQLite file, searchable by bm25 rank.

    Safe to share between threads: every call opens its own connection, and the file is
    in WAL mode so that searches never wait for a loader. Read methods on a file that
    does not exist yet answer as an empty index and do not create it.
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        self._schema_ready = False
        self._schema_lock = threading.Lock()

    @contextmanager
    def _connect(self, *, create: bool) -> Iterator[sqlite3.Connection | None]:
        if not create and not self.path.exists():
            yield None
            return
        if create:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        with closing(sqlite3.connect(self.path, timeout=30.0)) as connection:
            self._ensure_schema(connection)
            yield connection

    def _ensure_schema(self, connection: sqlite3.Connection) -> None:
        if self._schema_ready:
            return
        with self._schema_lock:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                connection.executescript(_SCHEMA)
            except sqlite3.OperationalError as error:
                if "fts5" in str(error).lower():
                    message = "this Python's SQLite is built without FTS5, which the search index needs"
                    raise RuntimeError(message) from error
                raise
            self._schema_ready = True

    def add(self, documents: Iterable[Document]) -> int:
        """Insert or replace (by url) every document, in one transaction; returns how many."""
        count = 0
        with self._connect(create=True) as connection:
            assert connection is not None
            with connection:
                for document in documents:
                    connection.execute(
                        "INSERT INTO documents(url, title, text) VALUES (?, ?, ?) "
                        "ON CONFLICT(url) DO UPDATE SET title = excluded.title, text = excluded.text",
                        (document.url, document.title, document.text),
                    )
                    count += 1
        return count

    def clear(self) -> None:
        """Remove every document."""
        with self._connect(create=True) as connection:
            assert connection is not None
            with connection:
                connection.execute("DELETE FROM documents")
                connection.execute("INSERT INTO documents_fts(documents_fts) VALUES ('rebuild')")

    def count(self) -> int:
        with self._connect(create=False) as connection:
            if connection is None:
                return 0
            return connection.execute("SELECT count(*) FROM documents").fetchone()[0]

    def get(self, url: str) -> Document | None:
        with self._connect(create=False) as connection:
            if connection is None:
                return None
            row = connection.execute("SELECT url, title, text FROM documents WHERE url = ?", (url,)).fetchone()
        return Document(*row) if row else None

    def search(self, query: str, topn: int) -> list[SearchHit]:
        """At most `topn` documents matching words of `query`, best first.

        Any text is a valid query: only its words are searched for, never its FTS syntax.
        Documents holding every word come first (by bm25), then those holding only some.
        """
        terms = query_terms(query)
        if not terms or topn <= 0:
            return []
        with self._connect(create=False) as connection:
            if connection is None:
                return []
            hits = self._ranked(connection, _match_expression(terms, "AND"), topn, exclude=())
            if len(hits) < topn and len(terms) > 1:
                seen = tuple(hit.url for hit in hits)
                hits += self._ranked(connection, _match_expression(terms, "OR"), topn - len(hits), exclude=seen)
        return hits

    def _ranked(
        self, connection: sqlite3.Connection, match: str, limit: int, exclude: tuple[str, ...]
    ) -> list[SearchHit]:
        placeholders = ", ".join("?" for _ in exclude)
        not_seen = f"AND d.url NOT IN ({placeholders})" if exclude else ""
        rows = connection.execute(
            f"""
            SELECT d.url, d.title, snippet(documents_fts, 1, '', '', '…', {_SNIPPET_TOKENS})
            FROM documents_fts JOIN documents AS d ON d.id = documents_fts.rowid
            WHERE documents_fts MATCH ? {not_seen}
            ORDER BY bm25(documents_fts, {_TITLE_WEIGHT}, 1.0)
            LIMIT ?
            """,
            (match, *exclude, limit),
        ).fetchall()
        return [SearchHit(url=url, title=title, snippet=" ".join(snippet.split())) for url, title, snippet in rows]


class LocalIndexBackend:
    """The SearchBackend over a LocalIndex."""

    def __init__(self, index: LocalIndex) -> None:
        self.index = index

    def search(self, query: str, topn: int) -> list[SearchHit]:
        try:
            return self.index.search(query, topn)
        except sqlite3.Error as error:
            raise BackendError(f"The search index could not be read ({error}).") from error

    def open(self, url: str) -> Document | None:
        try:
            return self.index.get(url)
        except sqlite3.Error as error:
            raise BackendError(f"The search index could not be read ({error}).") from error
