"""Items and list pages as the wire shows them (wire/objects.py), checked by the SDK's own
types."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from responses_app.wire.objects import check_servable, item_object, list_object, model_object, public_item

pytestmark = pytest.mark.core

CODE = {"id": "ci_1", "type": "code_interpreter_call", "status": "completed", "code": "print(1)",
        "container_id": "cntr_1", "outputs": [{"type": "logs", "logs": "1\n"}]}
SEARCH = {"id": "fs_1", "type": "file_search_call", "status": "completed", "queries": ["q"],
          "results": [{"file_id": "file-1", "filename": "a.md", "score": 0.5, "text": "A"}]}
WEB = {"id": "ws_1", "type": "web_search_call", "status": "completed",
       "action": {"type": "search", "query": "q", "sources": [{"type": "url", "url": "https://a.example"}]}}
FILE_MESSAGE = {"id": "msg_1", "type": "message", "role": "user", "status": "completed", "content": [
    {"type": "input_text", "text": "Read this."},
    {"type": "input_file", "file_id": "file-1", "filename": "a.md", "text": "what the model reads"}]}


@pytest.mark.parametrize(("item", "include", "hidden"), [
    (CODE, "code_interpreter_call.outputs", "outputs"),
    (SEARCH, "file_search_call.results", "results"),
])
def test_a_tools_output_is_shown_only_when_included(item, include, hidden):
    assert public_item(item, [])[hidden] is None
    assert public_item(item, [include]) == item
    assert item_object(public_item(item, [])) == {**item, hidden: None}


def test_a_web_searchs_sources_are_shown_only_when_included():
    assert "sources" not in public_item(WEB, [])["action"]
    assert public_item(WEB, ["web_search_call.action.sources"]) == WEB
    assert WEB["action"]["sources"]  # the stored item keeps them


def test_the_text_read_from_an_input_file_stays_on_the_server():
    shown = item_object(FILE_MESSAGE)
    assert shown["content"][1] == {"type": "input_file", "file_id": "file-1", "filename": "a.md"}
    assert FILE_MESSAGE["content"][1]["text"] == "what the model reads"


def test_an_item_the_sdk_cannot_type_is_not_servable():
    check_servable(FILE_MESSAGE)
    check_servable(CODE)
    with pytest.raises(ValidationError):
        check_servable({"id": "x_1", "type": "teleport_call"})
    with pytest.raises(ValidationError):
        check_servable({**CODE, "status": "exploded"})


def test_a_list_page_names_its_first_and_last_ids():
    assert list_object([{"id": "a"}, {"id": "b"}], has_more=True) == {
        "object": "list", "data": [{"id": "a"}, {"id": "b"}], "first_id": "a", "last_id": "b", "has_more": True}
    assert list_object([], has_more=False) == {"object": "list", "data": [], "first_id": None, "last_id": None,
                                               "has_more": False}
    assert model_object("gpt-oss-20b")["object"] == "model"
