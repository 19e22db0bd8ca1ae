"""A file_search tool parsed once at create into ``FileSearchTool``: the row stores the tool
as the response echoes it, and the worker reads the row back into the same typed options."""

from __future__ import annotations

import pytest

from responses_app.wire.errors import InvalidRequest
from responses_app.wire.search_options import (
    TOOL_RESULTS,
    Comparison,
    Compound,
    FileSearchTool,
    Ranking,
)

pytestmark = pytest.mark.core

SENT = {
    "type": "file_search",
    "vector_store_ids": ["vs_a", "vs_b", "vs_a"],
    "filters": {"type": "and", "filters": [{"type": "eq", "key": "team", "value": "hr"},
                                           {"type": "in", "key": "year", "value": [2025, 2026]}]},
    "max_num_results": 3,
    "ranking_options": {"ranker": "auto", "score_threshold": 0.25,
                        "hybrid_search": {"embedding_weight": 2, "text_weight": 1}},
}


def test_a_tool_is_parsed_into_typed_options_and_stored_as_echoed():
    tool = FileSearchTool.parse(SENT, "tools[0]")
    assert tool.vector_store_ids == ("vs_a", "vs_b")
    assert tool.filter == Compound("and", (Comparison("team", "eq", "hr"), Comparison("year", "in", (2025, 2026))))
    assert tool.max_num_results == 3
    assert tool.ranking == Ranking(score_threshold=0.25, embedding_weight=2.0, text_weight=1.0)
    stored = tool.to_stored()
    assert stored == {**SENT, "vector_store_ids": ["vs_a", "vs_b"]}
    assert FileSearchTool.from_stored(stored) == tool


def test_a_tool_with_only_its_stores_takes_the_documented_defaults():
    tool = FileSearchTool.from_stored({"type": "file_search", "vector_store_ids": ["vs_a"]})
    assert (tool.filter, tool.max_num_results, tool.ranking) == (None, TOOL_RESULTS, Ranking())
    assert tool.to_stored() == {"type": "file_search", "vector_store_ids": ["vs_a"]}


@pytest.mark.parametrize(("tool", "param"), [
    ({"type": "file_search", "vector_store_ids": []}, "tools[0].vector_store_ids"),
    ({"type": "file_search", "vector_store_ids": ["vs_a"], "rank": {}}, "tools[0].rank"),
    ({"type": "file_search", "vector_store_ids": ["vs_a"], "max_num_results": 51}, "tools[0].max_num_results"),
    ({"type": "file_search", "vector_store_ids": ["vs_a"], "filters": {"type": "near", "key": "k", "value": 1}},
     "tools[0].filters.type"),
])
def test_a_bad_tool_names_its_parameter(tool, param):
    with pytest.raises(InvalidRequest) as raised:
        FileSearchTool.parse(tool, "tools[0]")
    assert raised.value.param == param
