"""The file_search tool in harmony (harmony/file_search.py): how it is offered, how a call
is read, what the model reads back on this turn and the next, and how its markers become
file_citation annotations."""

from __future__ import annotations

import pytest

from responses_app.harmony import file_search
from responses_app.harmony.continuations import forced_call_prefix, reopened_item_prefix
from responses_app.harmony.encoding import get_encoding
from responses_app.harmony.history import TOOL_ITEM_RENDERERS
from responses_app.models.response_params import ToolChoice
from responses_app.wire.tool_types import ToolReference

RESULTS = [{"file_id": "file-a", "filename": "leave.md", "score": 0.8, "text": "27 days of leave.", "attributes": {}},
           {"file_id": "file-b", "filename": "expenses.md", "score": 0.3, "text": "Second class.", "attributes": {}}]


@pytest.mark.parametrize(("arguments", "queries"), [
    ('{"queries": ["leave", "holidays"]}', ["leave", "holidays"]),
    ('{"query": "leave"}', ["leave"]),
    ('{"queries": ["a", "b", "c", "d", "e", "f"]}', ["a", "b", "c", "d", "e"]),
    ('{"queries": ["", "leave"]}', ["leave"]),
])
def test_a_call_s_queries_are_read(arguments: str, queries: list[str]):
    assert file_search.read_queries(arguments) == queries


@pytest.mark.parametrize("arguments", ["not json", "[]", '{"queries": []}', '{"queries": [1]}', '{"q": "x"}'])
def test_a_call_that_cannot_be_read_says_why(arguments: str):
    with pytest.raises(ValueError, match="queries|JSON"):
        file_search.read_queries(arguments)


def test_the_results_are_read_back_under_their_markers_on_this_turn_and_the_next():
    assert file_search.results_text(RESULTS) == "【0†leave.md】\n27 days of leave.\n\n【1†expenses.md】\nSecond class."
    assert file_search.results_text([]) == "No results."
    item = {"type": "file_search_call", "status": "completed", "queries": ["leave"], "results": RESULTS}
    call, output = TOOL_ITEM_RENDERERS["file_search_call"](item, {})
    rendered = get_encoding().decode(get_encoding().render(call) + get_encoding().render(output))
    assert 'to=file_search.msearch' in rendered and '{"queries": ["leave"]}' in rendered
    assert "【0†leave.md】\n27 days of leave." in rendered
    failed = TOOL_ITEM_RENDERERS["file_search_call"]({**item, "status": "failed", "results": None}, {})[1]
    assert "Error" in get_encoding().decode(get_encoding().render(failed))


def test_a_marker_cites_the_latest_search_that_has_that_result():
    older = {"results": [{**RESULTS[1], "file_id": "file-old"}]}
    newer = {"results": RESULTS}
    text = "Leave: 27 days 【0†leave.md】. Trains 【1†expenses.md】, 【0†expenses.md】, 【7†nowhere.md】."
    citations = file_search.file_citations(text, [older, newer])
    assert [(c["file_id"], c["filename"], c["index"]) for c in citations] == [
        ("file-a", "leave.md", text.index("【0†leave")),
        ("file-b", "expenses.md", text.index("【1†")),
        ("file-old", "expenses.md", text.index("【0†expenses")),  # result 0 of the older search
    ]


def test_a_forced_or_continued_call_is_prefilled_with_its_header():
    encoding = get_encoding()
    forced_choice = ToolChoice(mode="required", named=ToolReference("file_search"))
    forced = encoding.decode(forced_call_prefix(forced_choice, [{"type": "file_search"}]))
    assert forced == "<|channel|>analysis to=file_search.msearch <|constrain|>json<|message|>"
    reopened = encoding.decode(reopened_item_prefix({"type": "file_search_call", "queries": []}))
    assert reopened == " to=file_search.msearch<|channel|>analysis <|constrain|>json<|message|>"
