"""Creating responses through the openai SDK against the live stack."""

from __future__ import annotations

import pytest

from tests.helpers import assert_dense, events_of, reasoning_and_answer, wait_until

pytestmark = pytest.mark.core


def test_plain_create_completes_with_reasoning_message_and_usage(alice):
    response = alice.responses.create(model="echo", input="What is the capital of France?")

    assert response.status == "completed"
    assert [item.type for item in response.output] == ["reasoning", "message"]
    assert "What is the capital of France?" in response.output_text
    assert response.output[0].content[0].text
    usage = response.usage
    assert usage.input_tokens > 0
    assert usage.output_tokens > usage.output_tokens_details.reasoning_tokens > 0
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    # The echo engine's prefix cache (on, as in make run): whole blocks of the tenant's
    # earlier prompts (the system message), never the last token.
    assert usage.input_tokens_details.cached_tokens % 16 == 0
    assert usage.input_tokens_details.cached_tokens < usage.input_tokens


def test_stream_is_accepted_by_the_sdk_accumulator_and_its_final_response_equals_get(alice):
    with alice.responses.stream(model="echo", input=reasoning_and_answer("Think – ünïcödé ✓.", "Done: 東京.")) as s:
        events = [event.to_dict() for event in s]
        final = s.get_final_response()

    assert events[0]["type"] == "response.created" and events[-1]["type"] == "response.completed"
    assert events[1]["type"] == "response.in_progress"
    assert_dense(events)
    assert final.output_text == "Done: 東京."
    assert final.output[0].content[0].text == "Think – ünïcödé ✓."
    stored = alice.responses.retrieve(final.id)
    assert (stored.id, stored.status, stored.output_text, stored.usage) == (
        final.id, final.status, final.output_text, final.usage)
    assert [item.id for item in stored.output] == [item.id for item in final.output]
    # The raw terminal event (replayed from the database) carries exactly what GET returns.
    replayed = events_of(alice.responses.retrieve(final.id, stream=True))
    assert replayed[-1]["response"] == stored.to_dict()


def test_item_ids_and_indexes_agree_between_stream_completed_and_get(alice):
    events = events_of(alice.responses.create(model="echo", input="ids please", stream=True))
    completed = events[-1]["response"]
    added = {e["output_index"]: e["item"]["id"] for e in events if e["type"] == "response.output_item.added"}
    done = {e["output_index"]: e["item"]["id"] for e in events if e["type"] == "response.output_item.done"}
    assert added == done == {index: item["id"] for index, item in enumerate(completed["output"])}
    for event in events:
        if "item_id" in event:
            assert added[event["output_index"]] == event["item_id"]
    assert alice.responses.retrieve(completed["id"]).to_dict()["output"] == completed["output"]


def test_max_output_tokens_ends_incomplete(alice):
    response = alice.responses.create(model="echo", input=reasoning_and_answer("a " * 40, "b"),
                                      max_output_tokens=16)
    assert response.status == "incomplete"
    assert response.incomplete_details.reason == "max_output_tokens"
    assert response.usage.output_tokens == 16
    assert all(item.status == "incomplete" for item in response.output[-1:])


def test_malformed_harmony_from_the_engine_fails_the_response_and_closes_its_items(alice):
    events = events_of(alice.responses.create(
        model="echo", input="<|channel|>final<|message|>partial answer<|start|>oops", stream=True))
    assert events[-1]["type"] == "response.failed"
    failed = events[-1]["response"]
    assert failed["status"] == "failed"
    assert "not valid harmony" in failed["error"]["message"]
    assert all(item["status"] != "in_progress" for item in failed["output"])
    assert alice.responses.retrieve(failed["id"]).status == "failed"


def test_an_engine_that_dies_fails_its_response_clearly_and_the_next_one_gets_a_new_engine(alice):
    events = events_of(alice.responses.create(model="echo", input="crash", stream=True,
                                              metadata={"echo_die_after_tokens": "5"}))
    failed = events[-1]["response"]
    assert events[-1]["type"] == "response.failed"
    assert "engine stopped" in failed["error"]["message"] and "die after 5 tokens" in failed["error"]["message"]
    assert all(item["status"] != "in_progress" for item in failed["output"])
    assert alice.responses.create(model="echo", input="and now?").status == "completed"


def test_beat_purges_an_unstored_response_once_it_has_ended(alice, db_access):
    from responses_app.models import Response

    unstored = alice.responses.create(model="echo", input="do not keep this", store=False).id
    kept = alice.responses.create(model="echo", input="keep this one").id
    # The stack's retention is 2 s, its purge interval 2 s (tests/live/stack.py).
    wait_until(lambda: not Response.objects.filter(pk=unstored).exists(), timeout=15)
    assert Response.objects.filter(pk=kept).exists()
