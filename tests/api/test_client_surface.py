"""What today's Responses clients send, through the openai SDK against the live stack:
every field the SDK types, the fields clients add (Codex's client_metadata, the Open
Responses penalties), item references, namespace tools and offline web search."""

from __future__ import annotations

import openai
import pytest

from tests.helpers import function_call_then_answer, reasoning_and_answer

pytestmark = pytest.mark.core

NAMESPACE_TOOL = {
    "type": "namespace", "name": "multi_agent_v1", "description": "Agents that work beside you.",
    "tools": [{"type": "function", "name": "close_agent", "description": "Close an agent.", "strict": False,
               "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}}],
}


def namespace_call_then_answer(arguments: str, answer: str) -> str:
    return (f"<|channel|>commentary to=multi_agent_v1.close_agent <|constrain|>json<|message|>{arguments}<|call|>"
            f"<|start|>assistant<|channel|>final<|message|>{answer}<|return|>")


def test_every_field_of_the_sdk_and_of_todays_clients_is_accepted_and_echoed(alice):
    response = alice.responses.create(
        model="echo", input="Hello", store=True,
        reasoning={"effort": "xhigh", "summary": "auto"},
        text={"verbosity": "low", "format": {"type": "text"}},
        prompt_cache_key="session-1", prompt_cache_retention="24h", prompt_cache_options={"ttl": "30m"},
        safety_identifier="user-1", service_tier="flex", top_logprobs=0, access_programs={"cyber": "standard"},
        extra_body={"client_metadata": {"session_id": "s-1", "installation_id": "i-1"},
                    "presence_penalty": 0.5, "frequency_penalty": -0.25},
    )

    assert response.status == "completed"
    echoed = alice.responses.retrieve(response.id).to_dict()
    assert echoed["reasoning"] == {"effort": "xhigh", "summary": "auto"}
    assert echoed["text"] == {"format": {"type": "text"}, "verbosity": "low"}
    assert (echoed["prompt_cache_key"], echoed["prompt_cache_retention"]) == ("session-1", "24h")
    assert echoed["service_tier"] == "default"  # the tier it ran on: this server has one
    assert (echoed["presence_penalty"], echoed["frequency_penalty"]) == (0.5, -0.25)


@pytest.mark.parametrize("effort", ["none", "minimal", "low", "medium", "high", "xhigh"])
def test_every_reasoning_effort_the_sdk_names_runs(alice, effort):
    response = alice.responses.create(model="echo", input="Hi", reasoning={"effort": effort})
    assert response.status == "completed" and response.reasoning.effort == effort


def test_a_field_no_sdk_and_no_client_defines_is_still_a_400_naming_it(alice):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", extra_body={"temprature": 0.2})
    assert raised.value.body["param"] == "temprature" and raised.value.body["code"] == "unknown_parameter"
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", extra_body={"presence_penalty": 2.5})
    assert raised.value.body["param"] == "presence_penalty"


def test_a_field_whose_meaning_this_server_cannot_honour_is_refused_saying_why(alice):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", extra_body={"moderation": {"model": "omni-moderation-latest"}})
    assert raised.value.body["param"] == "moderation" and "moderation" in raised.value.body["message"]


def test_an_item_reference_stands_for_a_stored_item_of_the_tenant(alice, bob):
    first = alice.responses.create(model="echo", input=reasoning_and_answer("Think.", "Paris is the capital."))
    message = first.output[-1]

    # As the Vercel AI SDK sends earlier items with store=true: by reference, typed or not.
    second = alice.responses.create(model="echo", input=[
        {"type": "item_reference", "id": first.output[0].id}, {"id": message.id},
        {"role": "user", "content": "And of Italy?"}])

    assert second.status == "completed"
    stored = [item.to_dict() for item in alice.responses.input_items.list(second.id, order="asc").data]
    assert [item["id"] for item in stored[:2]] == [first.output[0].id, message.id]
    assert stored[1]["content"][0]["text"] == "Paris is the capital."
    # Another tenant's item is not found, and nothing is written for it.
    with pytest.raises(openai.NotFoundError) as raised:
        bob.responses.create(model="echo", input=[{"type": "item_reference", "id": message.id}])
    assert raised.value.body["param"] == "input[0].id"


def test_a_namespace_tool_call_names_its_namespace_and_continues_the_conversation(alice):
    first = alice.responses.create(model="echo", tools=[NAMESPACE_TOOL], store=False,
                                   input=namespace_call_then_answer('{"id": "a1"}', "Closed."))

    [call] = [item for item in first.output if item.type == "function_call"]
    assert (call.namespace, call.name, call.arguments) == ("multi_agent_v1", "close_agent", '{"id": "a1"}')
    assert first.tools[0].to_dict()["tools"][0]["name"] == "close_agent"

    # Codex resends the whole history with store=false, the call naming its namespace.
    second = alice.responses.create(model="echo", tools=[NAMESPACE_TOOL], store=False, input=[
        {"role": "user", "content": namespace_call_then_answer('{"id": "a1"}', "Closed.")},
        call.to_dict(), {"type": "function_call_output", "call_id": call.call_id, "output": "closed"}])
    assert second.status == "completed" and second.output_text == "Closed."


@pytest.mark.parametrize("name", ["functions", "python", "browser"])
def test_a_namespace_may_not_take_the_name_of_a_built_in_one(alice, name):
    with pytest.raises(openai.BadRequestError):
        alice.responses.create(model="echo", input="Hi", tools=[{**NAMESPACE_TOOL, "name": name}])


def test_web_search_without_external_access_is_accepted_and_echoed(alice):
    response = alice.responses.create(model="echo", input="Hi",
                                      tools=[{"type": "web_search", "external_web_access": False}])
    assert response.status == "completed"
    assert response.tools[0].to_dict()["external_web_access"] is False


# --- stateless continuation: reasoning.encrypted_content ------------------------------------


def test_encrypted_reasoning_carries_the_models_reasoning_to_the_next_stateless_turn(alice, bob):
    script = ("<|channel|>analysis<|message|>The user wants the weather; I will call get_weather for Paris.<|end|>"
              "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
              '<|message|>{"city": "Paris"}<|call|>')
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    first = alice.responses.create(model="echo", input=script, tools=[tool], store=False,
                                   include=["reasoning.encrypted_content"])
    reasoning, call = first.output
    assert reasoning.encrypted_content and reasoning.content[0].text not in reasoning.encrypted_content

    def count(reasoning_item: dict | None) -> int:
        history = [{"role": "user", "content": script}, *([reasoning_item] if reasoning_item else []),
                   call.to_dict(), {"type": "function_call_output", "call_id": call.call_id, "output": "20 C"}]
        return alice.responses.input_tokens.count(model="echo", input=history, tools=[tool]).input_tokens

    # What the client hands back holds no readable reasoning, yet the model reads all of it.
    sealed = {"type": "reasoning", "id": reasoning.id, "summary": [], "encrypted_content": reasoning.encrypted_content}
    in_clear = {"type": "reasoning", "id": reasoning.id, "summary": [], "content": reasoning.to_dict()["content"]}
    assert count(sealed) == count(in_clear) > count(None)

    second = alice.responses.create(model="echo", tools=[tool], store=False, input=[
        {"role": "user", "content": script}, sealed, call.to_dict(),
        {"type": "function_call_output", "call_id": call.call_id, "output": "20 C"}])
    assert second.status == "completed"

    altered = {**sealed, "encrypted_content": sealed["encrypted_content"][:-6] + "AAAAAA"}
    for client, item in ((alice, altered), (bob, sealed)):  # altered, or another tenant's
        with pytest.raises(openai.BadRequestError) as raised:
            client.responses.create(model="echo", input=[item, {"role": "user", "content": "Hi"}], store=False)
        assert raised.value.body["code"] == "invalid_encrypted_content"


def test_a_retrieve_may_ask_for_the_encrypted_reasoning_of_a_stored_response(alice):
    response = alice.responses.create(model="echo", input="Hi")
    assert response.output[0].encrypted_content is None

    sealed = alice.responses.retrieve(response.id, include=["reasoning.encrypted_content"]).output[0]
    history = [{"type": "reasoning", "id": sealed.id, "summary": [], "encrypted_content": sealed.encrypted_content},
               {"role": "user", "content": "Again"}]
    assert alice.responses.create(model="echo", input=history, store=False).status == "completed"


# --- reasoning summaries -----------------------------------------------------------------------


def test_a_reasoning_summary_is_written_by_the_model_and_streamed_before_the_answer(alice):
    script = reasoning_and_answer("The user greets me. I should greet them back warmly.", "Hello!")
    events = [event.to_dict() for event in alice.responses.create(
        model="echo", input=script, stream=True, reasoning={"summary": "concise"})]
    plain = alice.responses.create(model="echo", input=script)

    types = [event["type"] for event in events]
    summary_events = [kind for kind in types if kind.startswith("response.reasoning_summary")]
    assert summary_events[0] == "response.reasoning_summary_part.added"
    assert summary_events[-2:] == ["response.reasoning_summary_text.done", "response.reasoning_summary_part.done"]
    # Between the reasoning's text and its item's done event, before the answer starts.
    reasoning_done = next(i for i, e in enumerate(events) if e["type"] == "response.output_item.done")
    assert types.index("response.reasoning_text.done") < types.index(summary_events[0])
    assert types.index(summary_events[-1]) < reasoning_done
    assert events[reasoning_done]["item"]["type"] == "reasoning"
    final = events[-1]["response"]
    # The echo model's summary is the reasoning's first sentence.
    assert final["output"][0]["summary"] == [{"type": "summary_text", "text": "The user greets me."}]
    assert "".join(e["delta"] for e in events if e["type"] == "response.reasoning_summary_text.delta") == \
        "The user greets me."
    assert final["output"][-1]["content"][0]["text"] == "Hello!"
    # The summary's tokens are counted.
    assert final["usage"]["output_tokens"] > plain.usage.output_tokens
    assert final["usage"]["input_tokens"] > plain.usage.input_tokens


def test_each_reasoning_item_of_a_tool_loop_gets_its_summary(alice):
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    first = alice.responses.create(model="echo", tools=[tool], reasoning={"summary": "auto"},
                                   input=function_call_then_answer("get_weather", "{}", "Sunny."))
    reasoning, call = first.output
    assert reasoning.summary[0].text == "I should call get_weather."
    assert call.type == "function_call" and first.status == "completed"


# --- logprobs ----------------------------------------------------------------------------------


def test_the_answers_logprobs_come_with_include_and_top_logprobs_streamed_and_stored(alice):
    script = reasoning_and_answer("Hm.", "Paris ☃ is lovely.")
    events = [event.to_dict() for event in alice.responses.create(
        model="echo", input=script, stream=True, include=["message.output_text.logprobs"], top_logprobs=2)]
    stored = alice.responses.retrieve(events[-1]["response"]["id"])

    part = stored.output[-1].content[0]
    # Each token's bytes, joined, are the text; the echo model is certain of every token.
    assert b"".join(bytes(entry.bytes) for entry in part.logprobs).decode() == part.text == "Paris ☃ is lovely."
    assert all(entry.logprob == 0.0 and [top.logprob for top in entry.top_logprobs] == [-20.0, -21.0]
               for entry in part.logprobs)
    streamed = [entry for e in events if e["type"] == "response.output_text.delta" for entry in e["logprobs"]]
    done = next(e for e in events if e["type"] == "response.output_text.done")
    assert [entry["token"] for entry in streamed] == [entry["token"] for entry in done["logprobs"]] == \
        [entry.token for entry in part.logprobs]
    assert stored.top_logprobs == 2
    # Reasoning has none, and without the include value the answer has none either.
    assert all(not e.get("logprobs") for e in events if e["type"].startswith("response.reasoning"))
    assert alice.responses.create(model="echo", input=script, top_logprobs=2).output[-1].content[0].logprobs == []


# --- context_management: compaction -----------------------------------------------------------


LONG_CONTEXT = [
    {"role": "user", "content": "Tell me about tides."},
    {"role": "assistant", "content": "Tides are the rise and fall of the sea. " * 20},
    {"role": "user", "content": "And the Moon?"},
    {"role": "assistant", "content": "The Moon's gravity pulls the water towards it. " * 20},
    {"role": "user", "content": "Thanks. Summarize in a word."},
]


def test_a_context_past_its_threshold_is_compacted_by_the_model_before_it_answers(alice):
    compacting = {"type": "compaction", "compact_threshold": 200}
    plain = alice.responses.create(model="echo", input=LONG_CONTEXT)
    first = alice.responses.create(model="echo", input=LONG_CONTEXT, context_management=[compacting])

    compaction, *rest = first.output
    assert compaction.type == "compaction" and compaction.encrypted_content
    assert first.output_text == plain.output_text == "You said: Thanks. Summarize in a word."
    # The summary's turn is counted; the answer's prompt is the user's messages and the summary.
    assert first.usage.input_tokens > plain.usage.input_tokens
    # Later turns read the compacted context: the assistant's long answers are gone from it.
    count = {"model": "echo", "input": "One more?"}
    after_compaction = alice.responses.input_tokens.count(previous_response_id=first.id, **count).input_tokens
    after_plain = alice.responses.input_tokens.count(previous_response_id=plain.id, **count).input_tokens
    assert after_compaction < after_plain / 2
    later = alice.responses.create(model="echo", previous_response_id=first.id, input="One more?")
    assert later.usage.input_tokens == after_compaction and later.output_text == "You said: One more?"


def test_a_context_under_its_threshold_is_left_alone(alice):
    response = alice.responses.create(model="echo", input=LONG_CONTEXT,
                                      context_management=[{"type": "compaction", "compact_threshold": 100000}])
    assert [item.type for item in response.output] == ["reasoning", "message"]


def test_context_management_of_another_type_is_a_400(alice):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", context_management=[{"type": "forgetting"}])
    assert raised.value.body["param"] == "context_management[0].type"


# --- custom tools --------------------------------------------------------------------------


PATCH_TOOL = {"type": "custom", "name": "apply_patch", "description": "Apply a patch to the files."}
PATCH = "*** Begin Patch\n*** Update File: a.txt\n-old\n+new\n*** End Patch"


def test_a_custom_tool_call_streams_its_free_text_input_and_round_trips(alice):
    script = (f"<|channel|>commentary to=functions.apply_patch<|message|>{PATCH}<|call|>"
              "<|start|>assistant<|channel|>final<|message|>Patched.<|return|>")
    events = [e.to_dict() for e in alice.responses.create(model="echo", input=script, tools=[PATCH_TOOL],
                                                          store=False, stream=True)]

    [call] = [item for item in events[-1]["response"]["output"] if item["type"] == "custom_tool_call"]
    assert (call["name"], call["input"]) == ("apply_patch", PATCH)
    deltas = [e["delta"] for e in events if e["type"] == "response.custom_tool_call_input.delta"]
    [done] = [e for e in events if e["type"] == "response.custom_tool_call_input.done"]
    assert "".join(deltas) == done["input"] == PATCH
    # The client applies it and sends the outcome back, as Codex does with apply_patch.
    second = alice.responses.create(model="echo", tools=[PATCH_TOOL], store=False, input=[
        {"role": "user", "content": script}, call,
        {"type": "custom_tool_call_output", "call_id": call["call_id"], "output": "Applied."}])
    assert second.status == "completed" and second.output_text == "Patched."


def test_a_grammar_needs_an_engine_that_enforces_it(alice):
    grammar = {"type": "grammar", "syntax": "regex", "definition": "[a-z]+"}
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", tools=[{**PATCH_TOOL, "format": grammar}])
    assert raised.value.body["param"] == "tools[0].format"


def test_a_custom_tool_output_must_answer_a_call(alice):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", tools=[PATCH_TOOL], input=[
            {"type": "custom_tool_call_output", "call_id": "call_none", "output": "x"}])
    assert raised.value.body["param"] == "input[0].call_id"


def test_optional_fields_sent_as_null_are_left_out(alice):
    response = alice.responses.create(model="echo", input="Hi", extra_body={
        "tools": None, "tool_choice": None, "text": None, "user": None, "reasoning": None, "include": None})
    assert response.status == "completed" and response.tool_choice == "auto"


def test_sealed_reasoning_is_opened_in_a_responses_input_only(alice):
    sealed = alice.responses.create(model="echo", input="Hi", include=["reasoning.encrypted_content"]).output[0]
    conversation = alice.conversations.create()
    with pytest.raises(openai.BadRequestError) as raised:
        alice.conversations.items.create(conversation.id, items=[
            {"type": "reasoning", "id": sealed.id, "summary": [], "encrypted_content": sealed.encrypted_content}])
    assert raised.value.body["param"] == "items[0].encrypted_content"


def test_a_namespace_holds_function_tools_only(alice):
    tool = {**NAMESPACE_TOOL, "tools": [{"type": "custom", "name": "patch"}]}
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", tools=[tool])
    assert raised.value.body["param"] == "tools[0].tools[0].type"
