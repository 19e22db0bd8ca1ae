"""Conversations: previous_response_id chains, function calls, input items, delete."""

from __future__ import annotations

from datetime import UTC, datetime

import openai
import pytest

from responses_app.harmony.prompt import PromptRequest, render_prompt
from tests.helpers import events_of, function_call_then_answer

pytestmark = pytest.mark.core

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def all_input_items(client: openai.OpenAI, response_id: str) -> list[dict]:
    return [item.to_dict() for item in client.responses.input_items.list(response_id, order="asc", limit=100)]


def test_a_three_turn_chain_puts_every_earlier_turn_into_the_prompt(alice):
    first = alice.responses.create(model="echo", input="My name is Ada.", instructions="Be brief.")
    second = alice.responses.create(model="echo", input="I live in Paris.", previous_response_id=first.id)
    third = alice.responses.create(model="echo", input="What do you know about me?",
                                   previous_response_id=second.id)
    assert third.status == "completed" and third.previous_response_id == second.id

    # The prompt the worker built is exactly the harmony rendering of the whole chain:
    # both earlier turns' inputs and outputs, then this turn's input (instructions are
    # not carried over, as in OpenAI's API).
    history = []
    for turn in (first, second):
        history += all_input_items(alice, turn.id) + [item.to_dict() for item in turn.output]
    history += all_input_items(alice, third.id)
    date = datetime.fromtimestamp(third.created_at, UTC).date().isoformat()
    expected = render_prompt(PromptRequest(history=history, conversation_date=date))
    alone = render_prompt(PromptRequest(history=all_input_items(alice, third.id), conversation_date=date))
    assert third.usage.input_tokens == len(expected) > len(alone)


def test_a_function_call_is_answered_with_function_call_output_in_the_next_turn(alice):
    script = function_call_then_answer("get_weather", '{"city":"Paris"}', "It is sunny in Paris.")
    events = events_of(alice.responses.create(model="echo", input=script, tools=[WEATHER_TOOL], stream=True))
    first = events[-1]["response"]
    assert first["status"] == "completed"
    call = first["output"][-1]
    assert (call["type"], call["name"], call["arguments"], call["status"]) == (
        "function_call", "get_weather", '{"city":"Paris"}', "completed")
    deltas = "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta")
    assert deltas == '{"city":"Paris"}'
    done = [e for e in events if e["type"] == "response.function_call_arguments.done"]
    assert [e["arguments"] for e in done] == ['{"city":"Paris"}']

    second = alice.responses.create(
        model="echo",
        previous_response_id=first["id"],
        tools=[WEATHER_TOOL],
        input=[{"type": "function_call_output", "call_id": call["call_id"], "output": '{"sky":"clear"}'}],
    )
    assert second.status == "completed"
    assert second.output_text == "It is sunny in Paris."


def test_input_items_page_in_both_orders(alice):
    messages = [{"role": "user", "content": f"message {n}"} for n in range(5)]
    response = alice.responses.create(model="echo", input=messages, background=True)
    ascending = all_input_items(alice, response.id)
    assert [item["content"][0]["text"] for item in ascending] == [f"message {n}" for n in range(5)]
    descending = [item.to_dict() for item in alice.responses.input_items.list(response.id)]
    assert descending == list(reversed(ascending))

    for order, expected in (("asc", ascending), ("desc", descending)):
        page = alice.responses.input_items.list(response.id, order=order, limit=2)
        assert [item.id for item in page.data] == [item["id"] for item in expected[:2]]
        assert page.has_more and page.first_id == expected[0]["id"] and page.last_id == expected[1]["id"]
        # The SDK follows the cursor (`after`) through every page.
        assert [item.id for item in page] == [item["id"] for item in expected]
        last = alice.responses.input_items.list(response.id, order=order, limit=2, after=expected[3]["id"])
        assert [item.id for item in last.data] == [expected[4]["id"]] and not last.has_more


def test_delete_removes_the_response_with_its_items_and_events(alice, db_access):
    from responses_app.models import InputItem, OutputItem, ResponseEvent

    response = alice.responses.create(model="echo", input="delete me")
    deleted = alice.responses.delete(response.id)
    assert deleted is None or deleted.deleted  # the SDK returns None for this endpoint
    for call in (lambda: alice.responses.retrieve(response.id),
                 lambda: alice.responses.input_items.list(response.id),
                 lambda: alice.responses.delete(response.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    for model in (InputItem, OutputItem, ResponseEvent):
        assert not model.objects.filter(response_id=response.id).exists()


def test_deleting_a_running_response_cancels_it_and_ends_its_stream(alice, stack):
    stream = alice.responses.create(model="echo", input="x " * 50, stream=True, background=True,
                                    metadata={"echo_token_delay_ms": "40"})
    first = next(iter(stream)).to_dict()
    response_id = first["response"]["id"]
    raw = alice.with_raw_response.responses.delete(response_id)
    assert raw.status_code == 200
    assert raw.http_response.json() == {"id": response_id, "object": "response.deleted", "deleted": True}
    # The open stream ends, with an error event, which the SDK raises, instead of hanging.
    with pytest.raises(openai.APIError, match="deleted while it was being streamed"):
        list(stream)
    with pytest.raises(openai.NotFoundError):
        alice.responses.retrieve(response_id)
