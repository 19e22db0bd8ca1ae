"""A request's query parameters read by http/params.py: the value, or a 400 naming the
parameter (never a 500 for a client's typo), and a parsed body's sent fields
(wire/request_body.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from django.http import QueryDict

from responses_app.http.params import bool_param, include_param, int_param, known_query, order_param, page_params
from responses_app.wire.errors import InvalidRequest
from responses_app.wire.request_body import MAX_INTEGER, body_fields, sent_fields

pytestmark = pytest.mark.core


def param_of_400(call, *args, **kwargs) -> str | None:
    with pytest.raises(InvalidRequest) as raised:
        call(*args, **kwargs)
    return raised.value.param


def test_a_page_is_twenty_newest_first_unless_asked():
    assert page_params(QueryDict("")) == (None, 20, "desc")
    assert page_params(QueryDict("after=resp_1&limit=100&order=asc"), orders=True) == ("resp_1", 100, "asc")
    assert page_params(QueryDict("limit=5&model=echo"), extra=("model",)) == (None, 5, "desc")


@pytest.mark.parametrize(("query", "param"), [
    ("limit=0", "limit"), ("limit=101", "limit"), ("limit=ten", "limit"),
    ("order=asc", "order"),  # this list has no order
    ("before=resp_1", "before"),
])
def test_a_wrong_page_parameter_is_a_400_naming_it(query: str, param: str):
    assert param_of_400(page_params, QueryDict(query)) == param


def test_order_is_asc_or_desc():
    assert order_param(QueryDict("order=asc")) == "asc" and order_param(QueryDict("")) == "desc"
    assert param_of_400(order_param, QueryDict("order=newest")) == "order"


def test_an_integer_cursor_beyond_an_integer_column_is_a_400_not_an_overflow():
    assert int_param(QueryDict("starting_after=7"), "starting_after", minimum=0) == 7
    assert int_param(QueryDict(""), "starting_after", minimum=0) is None
    assert param_of_400(int_param, QueryDict(f"starting_after={MAX_INTEGER + 1}"), "starting_after",
                        minimum=0) == "starting_after"


def test_a_boolean_is_true_or_false_in_the_spellings_clients_send():
    assert [bool_param(QueryDict(f"stream={value}"), "stream") for value in ("true", "1", "false", "0", "")] == [
        True, True, False, False, False]
    assert param_of_400(bool_param, QueryDict("stream=yes"), "stream") == "stream"


def test_include_takes_both_spellings_and_only_supported_values():
    query = QueryDict("include[]=file_search_call.results&include=reasoning.encrypted_content")
    assert include_param(query) == ["file_search_call.results", "reasoning.encrypted_content"]
    assert param_of_400(include_param, QueryDict("include=output_text.annotations")) == "include"
    assert param_of_400(include_param, QueryDict("stream=true")) == "stream"
    assert include_param(QueryDict("stream=true"), "stream") == []


def test_known_query_refuses_any_other_parameter():
    known_query(QueryDict("version=2"), ("version",))
    assert param_of_400(known_query, QueryDict("version=2&v=3"), ("version",)) == "v"


def test_body_fields_are_the_set_ones_of_those_named():
    assert body_fields({"name": "a", "url": None}, ("name", "url")) == {"name": "a"}
    assert param_of_400(body_fields, {"url": None}, ("name", "url"), required=("url",)) == "url"
    assert param_of_400(body_fields, {"nmae": "a"}, ("name",)) == "nmae"
    assert param_of_400(body_fields, ["a"], ("name",)) is None  # not an object: the body itself


def test_sent_fields_are_those_a_parsed_body_did_not_leave_none():
    @dataclass(frozen=True)
    class Update:
        name: str | None = None
        enabled: bool | None = None

    assert sent_fields(Update(enabled=False)) == {"enabled": False}
    assert sent_fields(Update()) == {}
