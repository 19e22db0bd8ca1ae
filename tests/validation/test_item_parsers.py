"""Every place that takes input items (a create's input, a conversation's create and items,
a steer's input, a stored prompt's input) parses them with one parser: for any item of the
types Codex added (additional_tools, tool_search_call, tool_search_output,
compaction_trigger), well formed or not, each place answers the same way: a 400 in
OpenAI's shape that names the parameter, or items whose every value can be stored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from responses_app.conversations.requests import parse_conversation_create, parse_items_add
from responses_app.prompts.requests import parse_template
from responses_app.validation.create import parse_create_request
from responses_app.validation.steer import parse_steer
from responses_app.wire.errors import InvalidRequest
from tests.validation.test_create_properties import json_values, storable, text

CODEX_ITEM_TYPES = ("additional_tools", "tool_search_call", "tool_search_output", "compaction_trigger")
function_tool = st.fixed_dictionaries({"type": st.just("function"), "name": st.sampled_from(["f", "lookup", ""])},
                                      optional={"parameters": json_values, "strict": json_values})
tools = st.one_of(st.lists(st.one_of(function_tool, json_values), max_size=2), json_values)
codex_items = st.fixed_dictionaries({"type": st.sampled_from(CODEX_ITEM_TYPES)}, optional={
    "id": st.one_of(st.none(), text), "role": st.one_of(st.just("developer"), json_values), "tools": tools,
    "arguments": st.one_of(st.dictionaries(text, json_values, max_size=2), json_values),
    "call_id": st.one_of(st.none(), text), "execution": st.one_of(st.sampled_from(["client", "server"]), json_values),
    "status": json_values, text: json_values})

# Each place that takes items: (what it makes of them, the name its items have in errors).
PLACES: dict[str, tuple[Callable[[list[Any]], list[dict[str, Any]]], str]] = {
    "responses.create": (lambda items: parse_create_request({"model": "echo", "input": items}).input_items,
                         "input"),
    "conversations.create": (lambda items: parse_conversation_create({"items": items})[1], "items"),
    "conversations.items.create": (lambda items: parse_items_add({"items": items}), "items"),
    "response.steer": (lambda items: parse_steer({"type": "response.steer", "previous_response_id": "resp_1",
                                                  "input": items}).input_items, "input"),
    "prompts.create": (lambda items: parse_template({"input": items}).input, "input"),
}


@pytest.mark.parametrize("place", sorted(PLACES))
@given(items=st.lists(codex_items, min_size=1, max_size=2))
@settings(max_examples=150, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
def test_an_item_of_a_codex_type_is_refused_with_a_400_that_names_it_or_stored(place: str, items: list[Any]):
    parse, name = PLACES[place]
    try:
        parsed = parse(items)
    except InvalidRequest as error:
        assert error.status_code == 400 and error.message.strip()
        assert error.param and error.param.startswith(name), error.body()
        storable(error.body())
        return
    storable(parsed)


MALFORMED = {"type": "additional_tools", "role": "developer", "tools": [{"allowed_callers": []}], "id": None}


@pytest.mark.parametrize("place", sorted(PLACES))
def test_an_additional_tools_item_whose_tool_has_no_type_is_the_same_400_everywhere(place: str):
    parse, name = PLACES[place]
    with pytest.raises(InvalidRequest) as error:
        parse([MALFORMED])
    if place == "response.steer":  # steering takes user messages only, and says so first
        assert error.value.param == f"{name}[0]"
        return
    assert error.value.param == f"{name}[0].tools[0].type"
    assert error.value.body()["error"] == {
        "message": f"Missing required parameter: '{name}[0].tools[0].type'.", "type": "invalid_request_error",
        "param": f"{name}[0].tools[0].type", "code": "missing_required_parameter"}


def test_a_compaction_trigger_outside_a_creates_input_is_a_400_that_says_where_it_belongs():
    with pytest.raises(InvalidRequest) as error:
        parse_items_add({"items": [{"type": "compaction_trigger"}]})
    assert error.value.param == "items[0].type" and "final input item of a create" in error.value.message
