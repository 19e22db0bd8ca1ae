"""Property-based tests of what a create body goes through before anything is stored: the
edge's JSON check (lib/json_input.py) and the create validation (validation/create.py).

For any JSON text a client can send, whatever its strings (lone surrogates, NUL, any
plane), numbers (huge, NaN, Infinity) and nesting: the outcome is a 400 in OpenAI's shape
or a request whose every stored value the databases and the wire can hold (UTF-8 text
without NUL, integers within the integer columns, finite numbers) and whose input items
render as the input item list and a conversation serve them."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from responses_app.validation.create import parse_create_request
from responses_app.wire.errors import InvalidRequest
from responses_app.wire.json_input import loads
from responses_app.wire.objects import conversation_item_object, item_object

MAX_DEPTH = 64
# Every character, lone surrogates and NUL included.
text = st.text(st.characters(codec=None, categories=None), max_size=12)
numbers = st.one_of(st.integers(min_value=-(2**80), max_value=2**80), st.floats(allow_nan=True, allow_infinity=True))
scalars = st.one_of(st.none(), st.booleans(), numbers, text)
json_values = st.recursive(scalars, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(text, children, max_size=3)), max_leaves=12)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["user", "assistant", "system", "developer", "tool"])},
    optional={"type": st.just("message"), "id": text, "content": st.one_of(
        text, st.lists(st.fixed_dictionaries({"type": st.sampled_from(["input_text", "output_text"]), "text": text}),
                       max_size=2), json_values)})
function_tool = st.fixed_dictionaries({"type": st.just("function"), "name": text},
                                      optional={"parameters": json_values, "description": text, "strict": json_values})
bodies = st.fixed_dictionaries({"model": st.just("echo")}, optional={
    "input": st.one_of(text, st.lists(st.one_of(message, json_values), max_size=3)),
    "instructions": st.one_of(text, json_values),
    "temperature": numbers, "top_p": numbers, "max_output_tokens": numbers, "max_tool_calls": numbers,
    "metadata": st.one_of(st.dictionaries(text, text, max_size=3), json_values),
    "tools": st.lists(st.one_of(function_tool, json_values), max_size=2),
    "text": json_values, "reasoning": json_values, "truncation": json_values, "user": json_values,
    "prompt_cache_key": json_values, "store": json_values, "stream": json_values,
})


def storable(value: Any) -> None:
    """What every database column and the wire can hold."""
    if isinstance(value, str):
        value.encode("utf-8")
        assert "\x00" not in value
    elif isinstance(value, bool) or value is None:
        pass
    elif isinstance(value, int):
        assert -(2**63) <= value < 2**63
    elif isinstance(value, float):
        assert math.isfinite(value)
    elif isinstance(value, list):
        for child in value:
            storable(child)
    else:
        assert isinstance(value, dict)
        for key, child in value.items():
            storable(key)
            storable(child)


@pytest.mark.parametrize("nested", [False, True])
@given(body=bodies)
@settings(max_examples=400, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
def test_a_create_body_is_refused_or_stored_in_a_shape_that_can_be_served(body: dict[str, Any], nested: bool):
    if nested:  # the same body, deep inside a list at the edge of the depth limit
        body = {**body, "metadata": _nest(body.get("metadata"), MAX_DEPTH - 1)}
    sent = json.dumps(body, allow_nan=True, ensure_ascii=True)  # as a client's encoder may write it
    try:
        request = parse_create_request(loads(sent, max_depth=MAX_DEPTH))
    except InvalidRequest as error:
        assert error.status_code == 400 and error.message.strip()
        storable(error.body())  # the error itself can be sent
        return
    storable(request.params.to_stored())  # what the Response row stores
    storable(request.input_items)
    for item in request.input_items:
        item_object(item)
        conversation_item_object(item, [])


def _nest(value: Any, depth: int) -> Any:
    for _ in range(depth):
        value = [value]
    return value


@given(depth=st.integers(min_value=MAX_DEPTH, max_value=5000))
@settings(max_examples=30, deadline=None, database=None, derandomize=True)
def test_nesting_past_the_limit_is_always_a_400(depth: int):
    with pytest.raises(InvalidRequest) as error:
        loads('{"input": ' + "[" * depth + "]" * depth + "}", max_depth=MAX_DEPTH)
    assert error.value.code == "nesting_too_deep"


def test_messages_read_back_from_a_conversation_and_dumped_by_the_sdk_are_accepted_with_their_phase():
    from responses_app.harmony.history import history_messages

    user = {"id": "msg_a", "type": "message", "role": "user", "status": "completed", "phase": None,
            "content": [{"type": "input_text", "text": "Hello", "prompt_cache_breakpoint": None}]}
    preamble = {"id": "msg_b", "type": "message", "role": "assistant", "status": "completed", "phase": "commentary",
                "content": [{"type": "output_text", "text": "Looking.", "annotations": [], "logprobs": []}]}
    answer = {**preamble, "id": "msg_c", "phase": "final_answer"}
    request = parse_create_request({"model": "echo", "input": [user, preamble, answer]})
    # A preamble is written on the channel the model wrote it on, an answer on "final".
    channels = [message.channel for message in history_messages(request.input_items)][1:]
    assert channels == ["commentary", "final"]
