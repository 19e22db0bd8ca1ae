"""The local search index (SQLite FTS5) and `manage.py load_search_documents`."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from tools_app.browser.backends import Document, SearchBackend, SearchHit
from tools_app.browser.local_index import LocalIndex, LocalIndexBackend

pytestmark = pytest.mark.core

PYTHON = Document(
    url="https://docs.example.org/python",
    title="Python (programming language)",
    text="Python is a high-level programming language. Its design emphasizes readability. "
    "Guido van Rossum began working on Python in the late 1980s.",
)
SNAKE = Document(
    url="https://zoo.example.com/pythons",
    title="Pythons",
    text="The python is a large snake found in Africa and Asia. Pythons are not venomous.",
)
RUST = Document(
    url="https://docs.example.org/rust",
    title="Rust",
    text="Rust is a programming language focused on memory safety. C++ programmers often like it.",
)


@pytest.fixture
def index(tmp_path: Path) -> LocalIndex:
    index = LocalIndex(tmp_path / "search.sqlite3")
    index.add([PYTHON, SNAKE, RUST])
    return index


def urls(hits: list[SearchHit]) -> list[str]:
    return [hit.url for hit in hits]


def test_add_counts_documents_and_get_returns_them_whole(index: LocalIndex) -> None:
    assert index.count() == 3
    assert index.get(PYTHON.url) == PYTHON
    assert index.get("https://nowhere.example/") is None


def test_add_with_a_known_url_replaces_the_document_and_its_searchable_words(index: LocalIndex) -> None:
    assert index.add([Document(url=SNAKE.url, title="Boas", text="Boas squeeze their prey.")]) == 1

    assert index.count() == 3
    assert index.get(SNAKE.url) == Document(url=SNAKE.url, title="Boas", text="Boas squeeze their prey.")
    assert urls(index.search("venomous", 10)) == []
    assert urls(index.search("squeeze", 10)) == [SNAKE.url]


def test_search_ranks_documents_holding_every_word_before_those_holding_some(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "search.sqlite3")
    # A plain OR ranking puts `repeats` first: a short page, the query word in its title.
    repeats = Document(url="https://a.example/repeats", title="Python", text="python python python")
    both = Document(url="https://a.example/both", title="Zoo", text="A " * 300 + "python snake.")
    snakes = [Document(url=f"https://a.example/snake{n}", title="Snakes", text="snake") for n in range(5)]
    index.add([repeats, both, *snakes])

    hits = urls(index.search("python snake", 3))

    assert hits[:2] == [both.url, repeats.url]
    assert hits[2] in {snake.url for snake in snakes}


def test_search_prefers_a_match_in_the_title(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "search.sqlite3")
    body_only = Document(url="https://a.example/1", title="Reptiles", text="A note on geckos and other lizards.")
    in_title = Document(url="https://a.example/2", title="Geckos", text="A note on small lizards of warm places.")
    index.add([body_only, in_title])

    assert urls(index.search("geckos", 10)) == [in_title.url, body_only.url]


def test_search_stems_words_and_ignores_case_and_accents(index: LocalIndex) -> None:
    assert urls(index.search("DESIGNED", 10)) == [PYTHON.url]
    assert index.add([Document(url="https://a.example/cafe", title="Café", text="Crème brûlée.")]) == 1
    assert urls(index.search("creme brulee", 10)) == ["https://a.example/cafe"]


def test_search_returns_at_most_topn_hits(index: LocalIndex) -> None:
    assert len(index.search("language python snake", 10)) == 3
    assert len(index.search("language python snake", 2)) == 2
    assert index.search("language", 0) == []


def test_snippet_is_an_excerpt_of_the_text_around_the_match(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "search.sqlite3")
    before = " ".join(f"before{n}" for n in range(200))
    after = " ".join(f"after{n}" for n in range(200))
    index.add([Document(url="https://a.example/long", title="Long", text=f"{before} the aardvark sleeps {after}")])

    [hit] = index.search("aardvark", 5)

    assert hit == SearchHit(url="https://a.example/long", title="Long", snippet=hit.snippet)
    assert "the aardvark sleeps" in hit.snippet
    assert "before0 " not in hit.snippet and "after199" not in hit.snippet
    assert hit.snippet.startswith("…") and hit.snippet.endswith("…")


@pytest.mark.parametrize(
    "query",
    ['"C++" AND (', "C++", "NEAR(a b", "title:rust", "rust*", '"', "^rust", "(((", "rust OR", "NOT rust", "-rust", "'"],
)
def test_any_query_text_is_searched_as_words_never_as_fts_syntax(index: LocalIndex, query: str) -> None:
    hits = index.search(query, 10)
    if "rust" in query.lower():
        assert RUST.url in urls(hits)


def test_a_query_of_only_punctuation_or_operators_finds_nothing(index: LocalIndex) -> None:
    assert index.search('"*()^:', 10) == []
    assert index.search("AND OR NOT", 10) == []
    assert index.search("", 10) == []


def test_clear_removes_every_document(index: LocalIndex) -> None:
    index.clear()

    assert index.count() == 0
    assert index.search("python", 10) == []
    assert index.get(PYTHON.url) is None


def test_an_index_file_that_does_not_exist_is_empty_and_is_not_created(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "missing" / "search.sqlite3")

    assert index.count() == 0
    assert index.search("python", 10) == []
    assert index.get(PYTHON.url) is None
    assert not index.path.exists()


def test_threads_can_search_while_another_thread_loads(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "search.sqlite3")
    index.add([PYTHON])
    errors: list[BaseException] = []

    def load() -> None:
        for n in range(20):
            index.add([Document(url=f"https://a.example/{n}", title=f"Page {n}", text="python again")])

    def search() -> None:
        try:
            for _ in range(20):
                assert PYTHON.url in urls(index.search("python", 50))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=load)] + [threading.Thread(target=search) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    assert index.count() == 21


def test_local_index_backend_is_a_search_backend(index: LocalIndex) -> None:
    backend = LocalIndexBackend(index)

    assert isinstance(backend, SearchBackend)
    assert urls(backend.search("snake", 5)) == [SNAKE.url]
    assert backend.open(RUST.url) == RUST
    assert backend.open("https://nowhere.example/") is None


# --- manage.py load_search_documents ------------------------------------------------


def load(*args: str) -> tuple[str, str]:
    from io import StringIO

    out, err = StringIO(), StringIO()
    call_command("load_search_documents", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_command_loads_jsonl_and_reports_bad_lines_with_file_and_line(tmp_path: Path) -> None:
    source = tmp_path / "docs.jsonl"
    source.write_text(
        "\n".join(
            [
                json.dumps({"url": PYTHON.url, "title": PYTHON.title, "text": PYTHON.text}),
                "{not json",
                "",
                json.dumps({"url": "https://a.example/no-text", "title": "No text"}),
                json.dumps(["a", "list"]),
                json.dumps({"url": RUST.url, "title": RUST.title, "text": RUST.text}),
            ]
        )
        + "\n"
    )
    index_path = tmp_path / "index.sqlite3"

    out, err = load(str(source), "--index", str(index_path))

    assert "Indexed 2 documents" in out
    assert f"{source}:2: not JSON" in err
    assert f"{source}:4: `text` must be a non-empty string" in err
    assert f"{source}:5: expected an object" in err
    assert ":3:" not in err and ":1:" not in err and ":6:" not in err
    index = LocalIndex(index_path)
    assert index.count() == 2
    assert index.get(RUST.url) == RUST


def test_command_loads_markdown_text_and_html_files_from_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "site"
    (folder / "guide").mkdir(parents=True)
    (folder / "guide" / "install.md").write_text("Intro\n\n## Installing the tool\n\nRun the installer.\n")
    (folder / "notes.txt").write_text("Plain notes about the weather.\n")
    (folder / "page.html").write_text(
        "<html><head><title>Home page</title><style>body {color: red}</style></head>"
        "<body><h1>Welcome</h1><p>Read the <a href='guide/install.md'>install guide</a> now.</p>"
        "<script>alert('no')</script><ul><li>first</li><li>second</li></ul></body></html>"
    )
    (folder / "image.png").write_bytes(b"\x89PNG")
    index_path = tmp_path / "index.sqlite3"

    out, _ = load(str(folder), "--index", str(index_path), "--base-url", "https://site.example/docs")

    assert "Indexed 3 documents" in out
    index = LocalIndex(index_path)
    install = index.get("https://site.example/docs/guide/install.md")
    assert install is not None and install.title == "Installing the tool"
    notes = index.get("https://site.example/docs/notes.txt")
    assert notes == Document(url=notes.url, title="notes", text="Plain notes about the weather.\n")
    page = index.get("https://site.example/docs/page.html")
    assert page is not None and page.title == "Home page"
    assert "Read the [install guide](https://site.example/docs/guide/install.md) now." in page.text
    assert "# Welcome" in page.text and "* first\n* second" in page.text
    assert "alert" not in page.text and "color: red" not in page.text


def test_command_gives_files_file_urls_without_a_base_url(tmp_path: Path) -> None:
    source = tmp_path / "a note.md"
    source.write_text("No heading here, just words.\n")
    index_path = tmp_path / "index.sqlite3"

    load(str(source), "--index", str(index_path))

    document = LocalIndex(index_path).get(source.resolve().as_uri())
    assert document is not None and document.title == "a note"


def test_command_clear_replaces_the_whole_index(tmp_path: Path) -> None:
    index_path = tmp_path / "index.sqlite3"
    LocalIndex(index_path).add([PYTHON, SNAKE])
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"url": RUST.url, "title": RUST.title, "text": RUST.text}) + "\n")

    load(str(source), "--index", str(index_path), "--clear")

    index = LocalIndex(index_path)
    assert index.count() == 1 and index.get(RUST.url) == RUST


def test_command_fails_when_nothing_could_be_loaded_and_keeps_the_index(tmp_path: Path) -> None:
    index_path = tmp_path / "index.sqlite3"
    LocalIndex(index_path).add([PYTHON])
    source = tmp_path / "bad.jsonl"
    source.write_text("{not json\n")

    with pytest.raises(CommandError, match="No documents loaded"):
        load(str(source), str(tmp_path / "missing.md"), "--index", str(index_path), "--clear")

    assert LocalIndex(index_path).count() == 1


def test_command_uses_the_configured_index_by_default(tmp_path: Path, settings) -> None:
    settings.WEB_SEARCH_INDEX_PATH = tmp_path / "configured.sqlite3"
    source = tmp_path / "docs.jsonl"
    source.write_text(json.dumps({"url": RUST.url, "title": RUST.title, "text": RUST.text}) + "\n")

    load(str(source))

    assert LocalIndex(tmp_path / "configured.sqlite3").get(RUST.url) == RUST
