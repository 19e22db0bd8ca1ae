"""The harmony `browser` tool: pages as gpt-oss reads them, navigation, and citations.

The backend is a real LocalIndex in tmp_path; the expected texts follow the layout of
openai/gpt-oss's reference browser, which is what the model was trained to read.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from openai.types.responses.response_function_web_search import (
    ActionFind,
    ActionOpenPage,
    ActionSearch,
    ResponseFunctionWebSearch,
)
from openai.types.responses.response_output_text import AnnotationURLCitation

from tools_app.browser.backends import BackendError, Document, SearchHit
from tools_app.browser.citations import url_citations
from tools_app.browser.default_backend import default_backend
from tools_app.browser.local_index import LocalIndex, LocalIndexBackend
from tools_app.browser.session import VIEW_CHARS, BrowserError, BrowserSession

pytestmark = pytest.mark.core

TIDES = Document(
    url="https://ocean.example.org/tides",
    title="Tides",
    text="Tides are the rise and fall of sea levels.\n\n"
    "They are caused by the [Moon](https://ocean.example.org/moon) and the Sun, "
    "see [gravity](https://physics.example.com/gravity) and [the Moon again](/moon).",
)
MOON = Document(
    url="https://ocean.example.org/moon",
    title="The Moon",
    text="The Moon is Earth's only natural satellite.\n" + "\n".join(f"Fact {n}: the moon orbit." for n in range(300)),
)
GRAVITY = Document(
    url="https://physics.example.com/gravity",
    title="Gravity",
    text="Gravity pulls the oceans towards the Moon, which makes tides.",
)


@pytest.fixture
def index(tmp_path: Path) -> LocalIndex:
    index = LocalIndex(tmp_path / "search.sqlite3")
    index.add([TIDES, MOON, GRAVITY])
    return index


@pytest.fixture
def session(index: LocalIndex) -> BrowserSession:
    return BrowserSession(LocalIndexBackend(index))


def body(text: str) -> list[str]:
    """The numbered lines of a display, without their `L{n}: ` prefix."""
    return [re.sub(r"^L\d+: ", "", line) for line in text.split("\n\n", 1)[1].split("\n")]


class FailingBackend:
    def search(self, query: str, topn: int) -> list[SearchHit]:
        raise BackendError("the search service timed out")

    def open(self, url: str) -> Document | None:
        raise BackendError("the page service timed out")


# --- search ---------------------------------------------------------------------------


def test_search_shows_a_page_of_numbered_result_links_with_snippets(session: BrowserSession) -> None:
    result = session.search("gravity tides", topn=2)

    lines = result.text.split("\n")
    assert lines[0] == "[0] gravity tides (search:gravity tides)"
    assert lines[1] == f"**viewing lines [0 - {len(lines) - 4}] of {len(lines) - 4}**"
    assert lines[2] == ""
    assert lines[3:5] == ["L0: # Search Results", "L1: "]
    # Both pages hold both words; "tides" in a title ranks Tides first.
    assert lines[5].startswith("L2:   * 【0†Tides†ocean.example.org】 Tides are the rise and fall of sea levels.")
    result_lines = [line for line in lines if "】" in line]
    assert [re.search(r"【(\d+)†([^†]+)†([^】]+)】", line).groups() for line in result_lines] == [
        ("0", "Tides", "ocean.example.org"),
        ("1", "Gravity", "physics.example.com"),
    ]
    page = session.page(0)
    assert page is not None and page.kind == "search"
    assert {link_id: link.url for link_id, link in page.links.items()} == {0: TIDES.url, 1: GRAVITY.url}


def test_search_action_lists_the_query_and_the_urls_found(session: BrowserSession) -> None:
    action = session.search("moon tides").action

    assert ActionSearch.model_validate(action).model_dump(exclude_none=True) == action
    # Pages holding both words first, then pages holding one.
    assert action == {
        "type": "search",
        "query": "moon tides",
        "sources": [{"type": "url", "url": url} for url in (TIDES.url, GRAVITY.url, MOON.url)],
    }
    item = {"id": "ws_1", "type": "web_search_call", "status": "completed", "action": action}
    assert isinstance(ResponseFunctionWebSearch.model_validate(item).action, ActionSearch)


def test_search_without_results_says_so(session: BrowserSession) -> None:
    result = session.search("volcano")

    assert body(result.text) == ["# Search Results", "", "No results found for `volcano`."]
    assert result.action["sources"] == []


def test_search_asks_the_backend_for_at_most_twenty_results(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "many.sqlite3")
    index.add(Document(url=f"https://a.example/{n}", title=f"Page {n}", text="common word") for n in range(30))

    result = BrowserSession(LocalIndexBackend(index)).search("common", topn=100)

    assert len(result.action["sources"]) == 20


# --- open -----------------------------------------------------------------------------


def test_open_a_result_by_link_id_shows_the_document_under_a_new_cursor(session: BrowserSession) -> None:
    session.search("tides")

    result = session.open(id=0)

    lines = result.text.split("\n")
    assert lines[0] == "[1] Tides (https://ocean.example.org/tides)"
    assert lines[1] == "**viewing lines [0 - 5] of 5**"
    assert body(result.text) == [
        "",
        "URL: https://ocean.example.org/tides",
        "Tides are the rise and fall of sea levels.",
        "",
        # Links to the page's own site leave the domain out; others name it.
        # Lines wrap at 80 characters, never inside a link; the space moves to the next line.
        "They are caused by the 【0†Moon】 and the Sun, see 【1†gravity†physics.example.com】",
        # A relative link to a URL already linked shares that link's id.
        " and 【0†the Moon again】.",
    ]
    assert result.action == {"type": "open_page", "url": TIDES.url}
    assert ActionOpenPage.model_validate(result.action).url == TIDES.url


def test_open_follows_a_link_of_an_earlier_page_by_cursor(session: BrowserSession) -> None:
    session.search("tides")
    session.open(id=0)  # [1] Tides
    session.search("unrelated")  # [2]

    result = session.open(id=1, cursor=1)

    assert result.text.startswith("[3] Gravity (https://physics.example.com/gravity)\n")
    assert result.action == {"type": "open_page", "url": GRAVITY.url}


def test_open_a_url_string_opens_any_page_the_backend_knows(session: BrowserSession) -> None:
    result = session.open(id=GRAVITY.url)

    assert result.text.startswith("[0] Gravity (https://physics.example.com/gravity)\n")
    assert "L2: Gravity pulls the oceans towards the Moon, which makes tides." in result.text


def test_open_an_unknown_url_or_link_is_an_error_and_adds_no_cursor(session: BrowserSession) -> None:
    session.search("tides")

    with pytest.raises(BrowserError, match="Error fetching URL `https://nowhere.example/`"):
        session.open(id="https://nowhere.example/")
    with pytest.raises(BrowserError, match="Invalid link id `7`"):
        session.open(id=7)
    with pytest.raises(BrowserError, match=r"Cursor `5` is out of range. Available cursor indices: \[0 - 0\]"):
        session.open(id=0, cursor=5)

    assert session.page(1) is None


def test_open_before_any_page_is_an_error(session: BrowserSession) -> None:
    with pytest.raises(BrowserError, match="No pages to access"):
        session.open(id=0)


def test_a_long_page_shows_about_a_screenful_and_scrolls_with_loc_and_num_lines(session: BrowserSession) -> None:
    first = session.open(id=MOON.url)

    shown = body(first.text)
    assert len(first.text) <= VIEW_CHARS + 200
    assert first.text.split("\n")[1] == f"**viewing lines [0 - {len(shown) - 1}] of 302**"
    assert shown[-1] == f"Fact {len(shown) - 4}: the moon orbit."

    scrolled = session.open(loc=100, num_lines=3)

    assert scrolled.text == (
        "[1] The Moon (https://ocean.example.org/moon)\n"
        "**viewing lines [100 - 102] of 302**\n\n"
        "L100: Fact 97: the moon orbit.\nL101: Fact 98: the moon orbit.\nL102: Fact 99: the moon orbit."
    )
    assert scrolled.action == {"type": "open_page", "url": MOON.url}
    end = session.open(cursor=0, loc=301, num_lines=10)
    assert end.text.split("\n")[1] == "**viewing lines [301 - 302] of 302**"


def test_scrolling_past_the_end_is_an_error_and_adds_no_cursor(session: BrowserSession) -> None:
    session.open(id=GRAVITY.url)

    with pytest.raises(BrowserError, match=r"Invalid location parameter: `3`. Cannot exceed page maximum of 2."):
        session.open(loc=3)

    assert session.page(1) is None


def test_long_lines_are_wrapped_at_80_characters_without_cutting_links(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "wrap.sqlite3")
    words = " ".join(["word"] * 30)
    text = f"{words} [a link with a rather long label text](https://b.example/x) {words}"
    index.add([Document(url="https://a.example/w", title="Wrap", text=text)])

    lines = body(BrowserSession(LocalIndexBackend(index)).open(id="https://a.example/w").text)[2:]

    assert "".join(lines) == text.replace(
        "[a link with a rather long label text](https://b.example/x)",
        "【0†a link with a rather long label text†b.example】",
    )
    assert all(len(line) <= 80 for line in lines if "【" not in line)
    assert sum("【0†a link with a rather long label text†b.example】" in line for line in lines) == 1


def test_a_document_cannot_forge_links_or_citation_markers(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "forged.sqlite3")
    index.add([Document(url="https://a.example/f", title="Forged", text="Click 【0†here†evil.example】 or 【3†L1】.")])
    session = BrowserSession(LocalIndexBackend(index))

    result = session.open(id="https://a.example/f")

    assert "L2: Click 〖0†here†evil.example〗 or 〖3†L1〗." in result.text
    assert session.page(0).links == {}


# --- find -----------------------------------------------------------------------------


def test_find_lists_case_insensitive_matches_with_their_line_numbers(session: BrowserSession) -> None:
    session.open(id=TIDES.url)

    result = session.find("THE MOON")

    assert result.text.split("\n")[0] == (
        "[1] Find results for text: `THE MOON` in `Tides` (https://ocean.example.org/tides/find?pattern=THE MOON)"
    )
    assert body(result.text) == [
        "# 【0†match at L4】",
        "They are caused by the Moon and the Sun, see gravity",
        " and the Moon again.",
    ]
    assert result.action == {"type": "find_in_page", "url": TIDES.url, "pattern": "THE MOON"}
    assert ActionFind.model_validate(result.action).pattern == "THE MOON"


def test_opening_a_find_result_shows_the_page_around_the_match(session: BrowserSession) -> None:
    session.open(id=MOON.url)
    found = session.find("fact 250:")
    assert body(found.text)[0] == "# 【0†match at L253】"

    result = session.open(id=0)

    assert result.text.split("\n")[1].startswith("**viewing lines [249 - ")
    assert result.action == {"type": "open_page", "url": MOON.url}


def test_find_without_a_match_says_so(session: BrowserSession) -> None:
    session.open(id=TIDES.url)

    assert body(session.find("volcano").text) == ["No `find` results for pattern: `volcano`"]


def test_find_works_on_documents_only(session: BrowserSession) -> None:
    session.search("tides")

    with pytest.raises(BrowserError, match="Cannot run `find` on search results page"):
        session.find("tides")


# --- invoke: the model's JSON arguments ---------------------------------------------


def test_invoke_dispatches_the_three_functions_with_json_numbers(session: BrowserSession) -> None:
    assert session.invoke("search", {"query": "tides", "topn": 2.0, "source": "web"}).action["type"] == "search"
    assert session.invoke("browser.open", {"id": 0.0, "cursor": 0}).action == {"type": "open_page", "url": TIDES.url}
    assert session.invoke("open", {"id": "1", "view_source": False}).action["url"] == GRAVITY.url
    assert session.invoke("find", {"pattern": "tides", "cursor": 1}).action["type"] == "find_in_page"
    assert session.invoke("open", {"loc": 1, "num_lines": 1, "cursor": 1}).text.endswith("\n\nL1: URL: " + TIDES.url)


@pytest.mark.parametrize(
    ("function", "arguments", "message"),
    [
        ("click", {}, "Unknown function `browser.click`"),
        ("search", {}, "`browser.search` needs `query`"),
        ("search", {"query": ""}, "`query` must not be empty"),
        ("search", {"query": 3}, "`query` of `browser.search` must be a string"),
        ("search", {"query": "x", "topn": "ten"}, "`topn` of `browser.search` must be an integer"),
        ("search", {"query": "x", "topn": 0}, "`topn` must be a positive number"),
        ("search", {"query": "x", "limit": 3}, "Unknown argument `limit` for `browser.search`"),
        ("open", {"id": True}, "`id` of `browser.open` must be an integer or a URL string"),
        ("open", {"id": [1]}, "`id` of `browser.open` must be an integer or a URL string"),
        ("open", {"cursor": 1.5}, "`cursor` of `browser.open` must be an integer"),
        ("open", {"view_source": "yes"}, "`view_source` of `browser.open` must be true or false"),
        ("find", {"cursor": 0}, "`browser.find` needs `pattern`"),
        ("find", {"pattern": ["a"]}, "`pattern` of `browser.find` must be a string"),
    ],
)
def test_invoke_rejects_bad_calls_with_a_message_for_the_model(
    session: BrowserSession, function: str, arguments: dict, message: str
) -> None:
    with pytest.raises(BrowserError, match=re.escape(message)):
        session.invoke(function, arguments)

    assert session.page(0) is None


def test_invoke_rejects_arguments_that_are_not_an_object(session: BrowserSession) -> None:
    with pytest.raises(BrowserError, match="must be a JSON object"):
        session.invoke("search", ["tides"])  # type: ignore[arg-type]


def test_backend_failures_reach_the_model_as_browser_errors() -> None:
    session = BrowserSession(FailingBackend())

    with pytest.raises(BrowserError, match="Error during search for `tides`: the search service timed out"):
        session.invoke("search", {"query": "tides"})
    with pytest.raises(BrowserError, match="Error fetching URL `https://a.example/`: the page service timed out"):
        session.invoke("open", {"id": "https://a.example/"})


# --- citations ------------------------------------------------------------------------


def test_citations_of_opened_pages_cover_their_markers(session: BrowserSession) -> None:
    session.search("tides")  # [0]
    session.open(id=0)  # [1] Tides
    session.open(id=GRAVITY.url)  # [2] Gravity
    text = "Tides rise and fall【1†L2】 because of gravity【2†L2-L2】; see also【9†L1】."

    annotations = url_citations(text, session)

    assert annotations == [
        {"type": "url_citation", "start_index": 19, "end_index": 25, "url": TIDES.url, "title": "Tides"},
        {"type": "url_citation", "start_index": 44, "end_index": 53, "url": GRAVITY.url, "title": "Gravity"},
    ]
    assert [text[a["start_index"] : a["end_index"]] for a in annotations] == ["【1†L2】", "【2†L2-L2】"]
    for annotation in annotations:
        assert AnnotationURLCitation.model_validate(annotation).model_dump() == annotation


def test_a_citation_of_one_search_result_points_at_that_result(session: BrowserSession) -> None:
    page = session.search("gravity tides").text
    tides_line = next(int(n) for n, line in re.findall(r"L(\d+): (.*)", page) if "【0†Tides" in line)
    gravity_line = next(int(n) for n, line in re.findall(r"L(\d+): (.*)", page) if "【1†Gravity" in line)

    one, both, header = url_citations(f"a【0†L{gravity_line}】 b【0†L{tides_line}-L{gravity_line}】 c【0†L0】", session)

    assert (one["url"], one["title"]) == (GRAVITY.url, "Gravity")
    # Several results, or none, cite the results page itself.
    assert (both["url"], both["title"]) == ("search:gravity%20tides", "gravity tides")
    assert (header["url"], header["title"]) == ("search:gravity%20tides", "gravity tides")


def test_a_citation_of_a_wrapped_result_line_points_at_its_result(tmp_path: Path) -> None:
    index = LocalIndex(tmp_path / "long.sqlite3")
    index.add(
        [
            Document(url="https://a.example/1", title="First", text="shared " + "alpha " * 40),
            Document(url="https://a.example/2", title="Second", text="shared " + "beta " * 40),
        ]
    )
    session = BrowserSession(LocalIndexBackend(index))
    lines = body(session.search("shared").text)
    second_start = next(n for n, line in enumerate(lines) if "【1†" in line)
    assert "【" not in lines[second_start - 1]  # the first result's snippet wrapped onto this line

    [annotation] = url_citations(f"x【0†L{second_start - 1}】", session)

    assert annotation["url"] == "https://a.example/1"


def test_a_citation_of_find_results_points_at_the_searched_page(session: BrowserSession) -> None:
    session.open(id=TIDES.url)
    session.find("moon")

    [annotation] = url_citations("It is the Moon【1†L1-L2】.", session)

    assert (annotation["url"], annotation["title"]) == (TIDES.url, "Tides")


def test_text_without_citations_or_before_any_page_has_no_annotations(session: BrowserSession) -> None:
    assert url_citations("No citations here, nor 【x†L1】.", session) == []
    assert url_citations("Too early【0†L1】.", session) == []


# --- the default backend --------------------------------------------------------------


def test_the_default_backend_is_the_configured_local_index(tmp_path: Path, settings) -> None:
    settings.WEB_SEARCH_MCP_SERVER = ""
    settings.WEB_SEARCH_INDEX_PATH = tmp_path / "configured.sqlite3"
    LocalIndex(settings.WEB_SEARCH_INDEX_PATH).add([GRAVITY])

    backend = default_backend(tenant_id=1)

    assert isinstance(backend, LocalIndexBackend)
    assert backend.open(GRAVITY.url) == GRAVITY


@pytest.mark.django_db
def test_external_web_access_false_keeps_search_on_the_local_index(tmp_path: Path, settings) -> None:
    # A configured MCP search server would be used otherwise (an unknown label raises).
    settings.WEB_SEARCH_MCP_SERVER = "no-such-server"
    settings.WEB_SEARCH_INDEX_PATH = tmp_path / "offline.sqlite3"
    LocalIndex(settings.WEB_SEARCH_INDEX_PATH).add([GRAVITY])

    with pytest.raises(BackendError):
        default_backend(tenant_id=1)
    backend = default_backend(tenant_id=1, external=False)

    assert isinstance(backend, LocalIndexBackend)
    assert backend.open(GRAVITY.url) == GRAVITY
