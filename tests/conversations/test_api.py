"""Conversations (client.conversations, client.conversations.items) and responses created
on them, with the real SDK, against the API in this process."""

from __future__ import annotations

import threading
from datetime import UTC, datetime
from typing import Any

import openai
import pytest

from responses_app.harmony.prompt import PromptRequest, render_prompt
from tests.conftest import sdk_client
from tests.helpers import function_call_then_answer, new_key, wait_for_status

pytestmark = pytest.mark.core

WEATHER_TOOL = {
    "type": "function", "name": "get_weather", "description": "The current weather in a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
SLOW = {"echo_token_delay_ms": "40"}


def items_of(client: openai.OpenAI, conversation_id: str) -> list[dict[str, Any]]:
    """Every item, oldest first (the SDK pages through them)."""
    return [item.to_dict() for item in client.conversations.items.list(conversation_id, order="asc", limit=7)]


def prompt_of(history: list[dict[str, Any]], created_at: int, **request: Any) -> list[int]:
    date = datetime.fromtimestamp(created_at, UTC).date().isoformat()
    return render_prompt(PromptRequest(history=history, conversation_date=date, **request))


def test_a_five_turn_conversation_puts_every_earlier_turn_into_the_prompt(alice):
    conversation = alice.conversations.create(
        metadata={"topic": "travel"}, items=[{"type": "message", "role": "user", "content": "My name is Ada."}])
    assert conversation.id.startswith("conv_") and conversation.metadata == {"topic": "travel"}
    for text in ["I live in Paris.", "I like trains.", "I have a cat.", "It is called Tom.",
                 "What do you know about me?"]:
        before = items_of(alice, conversation.id)
        response = alice.responses.create(model="echo", input=text, conversation=conversation.id)
        assert response.status == "completed" and response.conversation.id == conversation.id
        # The worker's prompt is the harmony rendering of every item so far, then this input.
        inputs = [item.to_dict() for item in alice.responses.input_items.list(response.id, order="asc")]
        assert [i["content"][0]["text"] for i in inputs] == [text]
        assert response.usage.input_tokens == len(prompt_of(before + inputs, response.created_at))
        # ... and the turn's input and output join the conversation, in order, after them.
        after = items_of(alice, conversation.id)
        assert after == before + inputs + [item.to_dict() for item in response.output]
        assert alice.responses.retrieve(response.id).conversation.id == conversation.id
    assert len(after) == 1 + 5 * 3  # the first item, then per turn: input, reasoning, answer
    assert after[-1]["content"][0]["text"].endswith("What do you know about me?")


def test_conversations_and_their_items_are_created_read_updated_and_deleted(alice):
    conversation = alice.conversations.create()
    assert alice.conversations.retrieve(conversation.id).model_dump() == conversation.model_dump()
    assert conversation.metadata == {} and conversation.object == "conversation"
    updated = alice.conversations.update(conversation.id, metadata={"k": "v"})
    assert updated.metadata == {"k": "v"} == alice.conversations.retrieve(conversation.id).metadata

    added = alice.conversations.items.create(conversation.id, items=[
        {"type": "message", "role": "user", "content": f"message {n}"} for n in range(20)])
    assert [item.content[0].text for item in added.data] == [f"message {n}" for n in range(20)]
    assert not added.has_more and added.first_id == added.data[0].id and added.last_id == added.data[-1].id
    with pytest.raises(openai.BadRequestError) as too_many:
        alice.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}] * 21)
    assert too_many.value.code == "array_above_max_length"
    with pytest.raises(openai.BadRequestError) as duplicate:
        alice.conversations.items.create(conversation.id, items=[{"id": added.data[0].id, "role": "user",
                                                                  "content": "again"}])
    assert duplicate.value.code == "duplicate_item"

    # Newest first by default; pages follow `after`, in both orders.
    newest = alice.conversations.items.list(conversation.id, limit=3)
    assert [i.content[0].text for i in newest.data] == ["message 19", "message 18", "message 17"]
    assert newest.has_more
    assert [i["id"] for i in items_of(alice, conversation.id)] == [i.id for i in added.data]
    page = alice.conversations.items.list(conversation.id, after=added.data[4].id, order="asc", limit=2)
    assert [i.id for i in page.data] == [added.data[5].id, added.data[6].id]

    item = alice.conversations.items.retrieve(added.data[3].id, conversation_id=conversation.id)
    assert item.model_dump() == added.data[3].model_dump()
    remaining = alice.conversations.items.delete(added.data[3].id, conversation_id=conversation.id)
    assert remaining.id == conversation.id and remaining.object == "conversation"
    assert added.data[3].id not in [i["id"] for i in items_of(alice, conversation.id)]
    with pytest.raises(openai.NotFoundError):
        alice.conversations.items.retrieve(added.data[3].id, conversation_id=conversation.id)

    deleted = alice.conversations.delete(conversation.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (conversation.id, "conversation.deleted", True)
    with pytest.raises(openai.NotFoundError):
        alice.conversations.retrieve(conversation.id)
    with pytest.raises(openai.NotFoundError):
        alice.conversations.items.list(conversation.id)


def test_bad_conversation_requests_are_400s_that_write_nothing(alice, db_access):
    from responses_app.models import Conversation, Response

    conversation = alice.conversations.create()
    previous = alice.responses.create(model="echo", input="hi")
    bad = [
        {"conversation": conversation.id, "previous_response_id": previous.id},
        {"conversation": {"id": conversation.id, "extra": 1}},
        {"conversation": 7},
    ]
    for body, param in zip(bad, ["previous_response_id", "conversation.extra", "conversation"], strict=True):
        with pytest.raises(openai.BadRequestError) as refused:
            alice.responses.create(model="echo", input="x", **body)
        assert refused.value.body["param"] == param, body
    with pytest.raises(openai.NotFoundError):
        alice.responses.create(model="echo", input="x", conversation="conv_missing")
    for body in ({"metadata": {"k": 1}}, {"items": "text"}, {"items": [{"role": "robot", "content": "x"}]},
                 {"unknown": 1}):
        with pytest.raises(openai.BadRequestError):
            alice.post("/conversations", body=body, cast_to=dict)
    with pytest.raises(openai.BadRequestError):
        alice.post(f"/conversations/{conversation.id}", body={}, cast_to=dict)  # metadata is required
    with pytest.raises(openai.BadRequestError):
        alice.conversations.items.list(conversation.id, after="msg_missing")
    assert not Response.objects.filter(conversation_id=conversation.id).exists()
    assert not Conversation.objects.get(pk=conversation.id).items.exists()


def test_a_malformed_item_of_a_codex_type_is_a_400_naming_it_on_every_conversation_write(alice, db_access):
    from responses_app.models import Conversation

    malformed = {"type": "additional_tools", "role": "developer", "tools": [{"allowed_callers": []}], "id": None}
    before = Conversation.objects.count()
    with pytest.raises(openai.BadRequestError) as refused:
        alice.conversations.create(items=[malformed])
    assert refused.value.status_code == 400 and refused.value.body["param"] == "items[0].tools[0].type"
    assert refused.value.body["code"] == "missing_required_parameter"
    assert Conversation.objects.count() == before
    conversation = alice.conversations.create()
    with pytest.raises(openai.BadRequestError) as refused:
        alice.conversations.items.create(conversation.id, items=[
            {"type": "tool_search_output", "execution": "client", "call_id": "c1", "tools": [{"type": "function"}]}])
    assert refused.value.body["param"] == "items[0].tools[0].name"
    assert not Conversation.objects.get(pk=conversation.id).items.exists()


def test_a_conversation_takes_one_response_at_a_time_and_the_other_gets_409(alice):
    conversation = alice.conversations.create()
    running = alice.responses.create(model="echo", input="first " * 20, conversation=conversation.id,
                                     background=True, metadata=SLOW)
    for attempt in (
        lambda: alice.responses.create(model="echo", input="second", conversation=conversation.id),
        lambda: alice.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}]),
        lambda: alice.conversations.delete(conversation.id),
    ):
        with pytest.raises(openai.ConflictError) as locked:
            attempt()
        assert locked.value.code == "conversation_locked"
    assert alice.conversations.update(conversation.id, metadata={"still": "editable"}).metadata == {"still": "editable"}

    first = wait_for_status(alice, running.id, {"completed"})
    second = alice.responses.create(model="echo", input="second", conversation=conversation.id)
    texts = [item["content"][0]["text"] for item in items_of(alice, conversation.id) if item["type"] == "message"]
    assert texts == ["first " * 20, first.output_text, "second", second.output_text]


def test_concurrent_creates_on_one_conversation_let_exactly_one_run(alice):
    conversation = alice.conversations.create()
    outcomes: list[Any] = []
    start = threading.Barrier(6)

    def create(n: int) -> None:
        start.wait()
        try:
            outcomes.append(alice.responses.create(model="echo", input=f"turn {n}", conversation=conversation.id))
        except openai.ConflictError as error:
            outcomes.append(error)

    threads = [threading.Thread(target=create, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    created = [outcome for outcome in outcomes if not isinstance(outcome, Exception)]
    assert len(outcomes) == 6 and len(created) >= 1
    assert all(error.code == "conversation_locked" for error in outcomes if isinstance(error, Exception))
    # Each response that ran holds the conversation alone: its three items are contiguous,
    # and every later one's prompt held the earlier ones.
    items = items_of(alice, conversation.id)
    assert len(items) == 3 * len(created)
    ran = sorted(created, key=lambda r: [i["id"] for i in items].index(r.output[0].id))
    for index, response in enumerate(ran):
        assert [i["id"] for i in items[3 * index + 1: 3 * index + 3]] == [o.id for o in response.output]
        assert response.usage.input_tokens == len(prompt_of(items[: 3 * index + 1], response.created_at))


def test_a_function_call_in_a_conversation_is_answered_in_the_next_turn(alice):
    conversation = alice.conversations.create()
    script = function_call_then_answer("get_weather", '{"city":"Paris"}', "It is sunny in Paris.")
    first = alice.responses.create(model="echo", input=script, tools=[WEATHER_TOOL], conversation=conversation.id)
    call = first.output[-1]
    assert call.type == "function_call"
    second = alice.responses.create(
        model="echo", tools=[WEATHER_TOOL], conversation={"id": conversation.id},
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": '{"sky":"clear"}'}])
    assert second.output_text == "It is sunny in Paris."
    types = [item["type"] for item in items_of(alice, conversation.id)]
    assert types == ["message", "reasoning", "function_call", "function_call_output", "message"]
    with pytest.raises(openai.BadRequestError):  # an output that answers no call of this conversation
        alice.responses.create(model="echo", conversation=conversation.id, input=[
            {"type": "function_call_output", "call_id": "call_unknown", "output": "{}"}])


def test_a_cancelled_response_leaves_the_conversation_as_it_was(alice):
    conversation = alice.conversations.create(items=[{"role": "user", "content": "hello"}])
    running = alice.responses.create(model="echo", input="long " * 50, conversation=conversation.id,
                                     background=True, metadata=SLOW)
    wait_for_status(alice, running.id, {"in_progress"})
    assert alice.responses.cancel(running.id).status == "cancelled"
    assert [i["content"][0]["text"] for i in items_of(alice, conversation.id)] == ["hello"]
    after = alice.responses.create(model="echo", input="again", conversation=conversation.id)
    assert after.status == "completed" and len(items_of(alice, conversation.id)) == 4


def test_another_tenants_conversations_and_items_are_not_found(alice, bob):
    conversation = alice.conversations.create(items=[{"role": "user", "content": "private"}])
    item_id = items_of(alice, conversation.id)[0]["id"]
    for attempt in (
        lambda: bob.conversations.retrieve(conversation.id),
        lambda: bob.conversations.update(conversation.id, metadata={}),
        lambda: bob.conversations.delete(conversation.id),
        lambda: bob.conversations.items.list(conversation.id),
        lambda: bob.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}]),
        lambda: bob.conversations.items.retrieve(item_id, conversation_id=conversation.id),
        lambda: bob.conversations.items.delete(item_id, conversation_id=conversation.id),
        lambda: bob.responses.create(model="echo", input="x", conversation=conversation.id),
        lambda: bob.responses.input_tokens.count(model="echo", input="x", conversation=conversation.id),
    ):
        with pytest.raises(openai.NotFoundError):
            attempt()
    assert [i["content"][0]["text"] for i in items_of(alice, conversation.id)] == ["private"]


def test_a_read_only_key_reads_conversations_and_cannot_write_them(alice, stack, db_access):
    conversation = alice.conversations.create(metadata={"k": "v"}, items=[{"role": "user", "content": "hi"}])
    reader = sdk_client(stack, new_key("alice", scope="read_only"))
    assert reader.conversations.retrieve(conversation.id).id == conversation.id
    assert len(reader.conversations.items.list(conversation.id).data) == 1
    for attempt in (
        lambda: reader.conversations.create(),
        lambda: reader.conversations.update(conversation.id, metadata={}),
        lambda: reader.conversations.delete(conversation.id),
        lambda: reader.conversations.items.create(conversation.id, items=[{"role": "user", "content": "x"}]),
    ):
        with pytest.raises(openai.PermissionDeniedError):
            attempt()
    # Nothing written: the conversation, its metadata and its one item as they were.
    assert alice.conversations.retrieve(conversation.id).metadata == {"k": "v"}
    assert [item["content"][0]["text"] for item in items_of(alice, conversation.id)] == ["hi"]


# --- input token counts ------------------------------------------------------------------


def test_input_tokens_count_equals_the_first_turns_usage(alice, stack, db_access):
    """The count is what the create's first engine turn is given, for every way a prompt
    is made: instructions and tools, a previous response, a conversation."""
    previous = alice.responses.create(model="echo", input="My name is Ada.")
    conversation = alice.conversations.create(items=[{"role": "user", "content": "I live in Paris."}])
    cases = [
        {"input": "hello", "instructions": "Be brief.", "tools": [WEATHER_TOOL], "reasoning": {"effort": "high"}},
        {"input": [{"role": "developer", "content": "Answer in French."}, {"role": "user", "content": "hi"}]},
        {"input": "And my name?", "previous_response_id": previous.id},
        {"input": "Where do I live?", "conversation": conversation.id},
    ]
    for case in cases:
        count = alice.responses.input_tokens.count(model="echo", **case)
        assert count.object == "response.input_tokens"
        response = alice.responses.create(model="echo", **case)
        assert count.input_tokens == response.usage.input_tokens, case
    reader = sdk_client(stack, new_key("alice", scope="read_only"))
    assert reader.responses.input_tokens.count(input="hello").input_tokens > 0  # a read; model is optional


def test_bad_input_token_counts_are_400s(alice):
    for body in ({}, {"input": "x", "stream": True}, {"input": "x", "model": "nope"}, {"input": 5},
                 {"input": "x", "personality": "friendly"}):
        with pytest.raises(openai.BadRequestError):
            alice.post("/responses/input_tokens", body=body, cast_to=dict)
    with pytest.raises(openai.NotFoundError):
        alice.responses.input_tokens.count(input="x", previous_response_id="resp_missing")


# --- truncation "auto" -----------------------------------------------------------------------


def test_truncation_auto_drops_the_oldest_turns_to_fit_a_small_context(alice, db_access):
    from responses_app.models import Response

    # echo-short's context is 400 tokens: five turns of about 100 do not fit in one prompt.
    conversation = alice.conversations.create()
    for n in range(5):
        alice.conversations.items.create(conversation.id, items=[
            {"role": "user", "content": f"Turn {n}: " + "many words of context " * 20}])
    request = {"model": "echo-short", "input": "What came last?", "conversation": conversation.id,
               "instructions": "Be brief."}
    with pytest.raises(openai.BadRequestError) as refused:
        alice.responses.create(**request)
    assert refused.value.code == "context_length_exceeded"

    count = alice.responses.input_tokens.count(**request, truncation="auto")
    response = alice.responses.create(**request, truncation="auto")
    assert response.status == "completed" and response.truncation == "auto"
    dropped = Response.objects.get(pk=response.id).truncated_items
    # The prompt is the instructions and the newest whole items that fit, and nothing else.
    items = items_of(alice, conversation.id)[:5]
    kept = items[dropped:] + [item.to_dict() for item in alice.responses.input_items.list(response.id)]
    assert 0 < dropped < 5
    assert response.usage.input_tokens == count.input_tokens == len(
        prompt_of(kept, response.created_at, instructions="Be brief.")) < 400
    assert len(prompt_of(items[dropped - 1:] + kept[-1:], response.created_at, instructions="Be brief.")) >= 400
