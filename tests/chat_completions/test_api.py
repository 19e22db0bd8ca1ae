"""POST /v1/chat/completions through the openai SDK (client.chat.completions.create), in
process with the worker inline: the completion and its stream in Chat Completions' shapes,
a tool loop whose prompt is the one harmony renders for the same Responses items, and bad
requests as OpenAI's 400s naming the completion's own parameter."""

from __future__ import annotations

import base64
import json

import openai
import pytest

from tests.conftest import http_client, sdk_client
from tests.helpers import assert_openai_error, new_key, new_tenant, reasoning_and_answer

pytestmark = pytest.mark.core

CITY = {"type": "object", "properties": {"city": {"type": "string"}}}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                            "parameters": CITY}}
# What the echo engine writes for this user message: a reasoning, then a call of get_weather.
CALL_SCRIPT = ("<|channel|>analysis<|message|>The user wants the weather; I will call get_weather for Paris.<|end|>"
               "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
               '<|message|>{"city": "Paris"}<|call|>')


def test_a_completion_answers_with_its_reasoning_under_both_names_and_its_usage(alice: openai.OpenAI):
    completion = alice.chat.completions.create(model="echo", messages=[
        {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hello there"}])

    assert completion.object == "chat.completion" and completion.id.startswith("chatcmpl-")
    assert completion.model == "echo"
    [choice] = completion.choices
    assert (choice.index, choice.finish_reason, choice.message.role) == (0, "stop", "assistant")
    assert "Hello there" in choice.message.content and choice.message.tool_calls is None
    extra = choice.message.model_extra
    assert extra["reasoning_content"] == extra["reasoning"] and extra["reasoning"]
    usage = completion.usage
    assert usage.prompt_tokens > 0 and usage.completion_tokens > 0
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert 0 < usage.completion_tokens_details.reasoning_tokens < usage.completion_tokens
    # The echo engine's prefix cache (on, as in make run): whole blocks of the tenant's
    # earlier prompts (the system message), never the last token.
    assert usage.prompt_tokens_details.cached_tokens % 16 == 0
    assert usage.prompt_tokens_details.cached_tokens < usage.prompt_tokens


@pytest.mark.parametrize("fields", ["reasoning", "reasoning_content"])
def test_a_key_can_keep_one_name_of_the_reasoning_whole_streamed_and_stored(stack, db_access, fields: str):
    client = sdk_client(stack, new_key(new_tenant(), reasoning_fields=fields))
    other = {"reasoning": "reasoning_content", "reasoning_content": "reasoning"}[fields]
    messages = [{"role": "user", "content": "Hello there"}]
    completion = client.chat.completions.create(model="echo", messages=messages, store=True)
    extra = completion.choices[0].message.model_extra
    assert extra[fields] and other not in extra
    stored = client.chat.completions.retrieve(completion.id).choices[0].message.model_extra
    assert stored[fields] == extra[fields] and other not in stored
    listed = client.chat.completions.list().data[0].choices[0].message.model_extra
    assert listed[fields] == extra[fields] and other not in listed
    deltas = [chunk.choices[0].delta.model_extra for chunk in client.chat.completions.create(
        model="echo", messages=messages, stream=True) if chunk.choices]
    assert "".join(delta.get(fields) or "" for delta in deltas) == extra[fields]
    assert not any(other in delta for delta in deltas)


def test_a_tool_loop_replays_the_call_and_its_result_as_harmony_says_them(alice: openai.OpenAI):
    asked = [{"role": "user", "content": CALL_SCRIPT}]
    first = alice.chat.completions.create(model="echo", messages=asked, tools=[WEATHER])
    [choice] = first.choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    [call] = choice.message.tool_calls
    assert (call.type, call.function.name, json.loads(call.function.arguments)) == (
        "function", "get_weather", {"city": "Paris"})

    answered = [*asked, {"role": "assistant", "content": "Looking it up.", "tool_calls": [call.to_dict()],
                         "reasoning_content": choice.message.model_extra["reasoning_content"]},
                {"role": "tool", "tool_call_id": call.id, "content": "20 C and sunny"}]
    second = alice.chat.completions.create(model="echo", messages=answered, tools=[WEATHER])
    assert second.choices[0].finish_reason == "stop" and second.choices[0].message.content

    # The same conversation said as Responses items renders the same harmony prompt: the
    # tool's result is authored by get_weather, the content beside the call is a preamble.
    items = [{"role": "user", "content": CALL_SCRIPT},
             {"type": "reasoning", "id": "rs_1", "summary": [], "content": [
                 {"type": "reasoning_text", "text": choice.message.model_extra["reasoning_content"]}]},
             {"type": "message", "role": "assistant", "phase": "commentary", "content": "Looking it up."},
             {"type": "function_call", "call_id": call.id, "name": "get_weather", "arguments": call.function.arguments},
             {"type": "function_call_output", "call_id": call.id, "output": "20 C and sunny"}]
    tool = {"type": "function", **WEATHER["function"]}
    counted = alice.responses.input_tokens.count(model="echo", input=items, tools=[tool]).input_tokens
    assert second.usage.prompt_tokens == counted


def test_a_stream_is_chunks_every_sdk_parser_takes_ending_with_usage_then_done(alice: openai.OpenAI, stack, alice_key):
    whole = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Hello there"}])
    chunks = list(alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Hello there"}],
                                                stream=True, stream_options={"include_usage": True}))

    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert len({chunk.id for chunk in chunks}) == 1
    assert chunks[0].choices[0].delta.role == "assistant"
    assert not any(chunk.choices and chunk.choices[0].delta.role for chunk in chunks[1:])
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    reasoning = "".join((chunk.choices[0].delta.model_extra or {}).get("reasoning") or ""
                        for chunk in chunks if chunk.choices)
    assert text == whole.choices[0].message.content
    assert reasoning == whole.choices[0].message.model_extra["reasoning"]
    finishing = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
    assert finishing[:-1] == [None] * (len(finishing) - 1) and finishing[-1] == "stop"
    assert chunks[-1].choices == [] and chunks[-1].usage.completion_tokens == whole.usage.completion_tokens
    assert all(chunk.usage is None for chunk in chunks[:-1])

    raw = http_client(stack, alice_key).post("/chat/completions", json={
        "model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stream": True})
    assert raw.headers["content-type"].startswith("text/event-stream")
    frames = [frame for frame in raw.text.split("\n\n") if frame.startswith("data: ")]
    assert frames[-1] == "data: [DONE]" and "usage" not in json.loads(frames[-2].removeprefix("data: "))


def test_a_file_part_is_read_as_text_as_an_input_file_is(alice: openai.OpenAI):
    csv = base64.b64encode(b"city,visits\nOslo,12\nLima,7\n").decode()
    notes = alice.files.create(file=("notes.md", b"The venue is the old library."), purpose="user_data")
    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": [
        {"type": "text", "text": "Read these."},
        {"type": "file", "file": {"filename": "visits.csv", "file_data": csv}},
        {"type": "file", "file": {"file_id": notes.id}}]}])
    answer = completion.choices[0].message.content
    assert "Read these." in answer and "Oslo,12\nLima,7" in answer and "The venue is the old library." in answer


def test_a_call_the_model_writes_on_the_analysis_channel_is_a_tool_call_not_text(alice: openai.OpenAI):
    on_analysis = CALL_SCRIPT.replace("<|channel|>commentary to=", "<|channel|>analysis to=")
    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": on_analysis}],
                                               tools=[WEATHER])
    [choice] = completion.choices
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    assert [(call.function.name, json.loads(call.function.arguments)) for call in choice.message.tool_calls] == [
        ("get_weather", {"city": "Paris"})]
    # The reasoning is the analysis before the call, the call's JSON none of it.
    assert choice.message.model_extra["reasoning"] == "The user wants the weather; I will call get_weather for Paris."


TIME = {"type": "function", "function": {"name": "get_time", "description": "The time in a city.",
                                         "parameters": CITY}}


@pytest.mark.parametrize(("tools", "choice", "called"), [
    ([WEATHER], "required", "get_weather"),
    ([WEATHER, TIME], {"type": "function", "function": {"name": "get_time"}}, "get_time"),
    ([WEATHER, TIME], {"type": "allowed_tools", "allowed_tools": {
        "mode": "required", "tools": [{"type": "function", "function": {"name": "get_time"}}]}}, "get_time"),
])
def test_a_forcing_tool_choice_makes_the_call_it_names(alice: openai.OpenAI, tools, choice, called):
    # A plain question: the model would answer it; the choice makes it call the tool.
    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Paris?"}],
                                               tools=tools, tool_choice=choice)
    [message] = [each.message for each in completion.choices]
    assert completion.choices[0].finish_reason == "tool_calls" and message.content is None
    assert [call.function.name for call in message.tool_calls] == [called]


def test_tool_choice_none_offers_no_tool_to_the_model(alice: openai.OpenAI):
    messages = [{"role": "user", "content": "Paris?"}]
    bare = alice.chat.completions.create(model="echo", messages=messages)
    none = alice.chat.completions.create(model="echo", messages=messages, tools=[WEATHER], tool_choice="none")
    offered = alice.chat.completions.create(model="echo", messages=messages, tools=[WEATHER])
    assert none.usage.prompt_tokens == bare.usage.prompt_tokens < offered.usage.prompt_tokens
    assert none.choices[0].finish_reason == "stop" and none.choices[0].message.tool_calls is None


@pytest.mark.parametrize("parallel", [True, False])
def test_a_completion_holds_the_models_one_call_of_a_turn_its_next_call_comes_next_turn(alice: openai.OpenAI,
                                                                                        parallel: bool):
    # gpt-oss ends a turn at <|call|>: one call per completion, parallel_tool_calls or not.
    two_calls = CALL_SCRIPT + CALL_SCRIPT.replace("Paris", "Rome").replace(
        "<|channel|>analysis", "<|start|>assistant<|channel|>analysis", 1)
    asked = [{"role": "user", "content": two_calls}]
    first = alice.chat.completions.create(model="echo", messages=asked, tools=[WEATHER], parallel_tool_calls=parallel)
    [call] = first.choices[0].message.tool_calls
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    answered = [*asked, {"role": "assistant", "tool_calls": [call.to_dict()]},
                {"role": "tool", "tool_call_id": call.id, "content": "Sunny"}]
    second = alice.chat.completions.create(model="echo", messages=answered, tools=[WEATHER],
                                           parallel_tool_calls=parallel)
    assert [json.loads(each.function.arguments) for each in second.choices[0].message.tool_calls] == [
        {"city": "Rome"}]


def test_streamed_tool_calls_carry_their_index_on_every_chunk_and_their_name_once(alice: openai.OpenAI):
    chunks = list(alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": CALL_SCRIPT}],
                                                tools=[WEATHER], stream=True))
    deltas = [call for chunk in chunks if chunk.choices for call in chunk.choices[0].delta.tool_calls or []]
    assert deltas and {delta.index for delta in deltas} == {0}
    assert [delta.function.name for delta in deltas if delta.function.name] == ["get_weather"]
    assert len([delta.id for delta in deltas if delta.id]) == 1
    assert json.loads("".join(delta.function.arguments or "" for delta in deltas)) == {"city": "Paris"}
    assert chunks[-1].choices[0].finish_reason == "tool_calls"


def test_a_budget_spent_during_the_reasoning_ends_with_length_not_an_empty_stop(alice: openai.OpenAI):
    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Hello there"}],
                                               max_completion_tokens=2)
    assert completion.choices[0].finish_reason == "length"
    assert completion.usage.completion_tokens == 2
    streamed = list(alice.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "Hello there"}], max_completion_tokens=2, stream=True,
        stream_options={"include_usage": True}))
    assert [chunk.choices[0].finish_reason for chunk in streamed if chunk.choices][-1] == "length"
    assert streamed[-1].usage.completion_tokens == 2
    assert not any(chunk.choices[0].delta.content for chunk in streamed if chunk.choices)


def test_logprobs_are_the_answers_tokens_whole_and_streamed(alice: openai.OpenAI):
    script = reasoning_and_answer("Hm.", "Paris ☃ is lovely.")
    whole = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": script}],
                                          logprobs=True, top_logprobs=2)
    tokens = whole.choices[0].logprobs.content
    assert b"".join(bytes(entry.bytes) for entry in tokens).decode() == whole.choices[0].message.content
    assert all(entry.logprob == 0.0 and [top.logprob for top in entry.top_logprobs] == [-20.0, -21.0]
               for entry in tokens)
    chunks = list(alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": script}],
                                                logprobs=True, top_logprobs=2, stream=True))
    streamed = [entry for chunk in chunks if chunk.choices and chunk.choices[0].logprobs
                for entry in chunk.choices[0].logprobs.content]
    assert [entry.token for entry in streamed] == [entry.token for entry in tokens]
    plain = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": script}])
    assert plain.choices[0].logprobs is None


STOPPED = reasoning_and_answer("Think first, END of nothing.", "Paris is lovely. END Ignore this part.")


@pytest.mark.parametrize("stream", [False, True])
def test_a_stop_sequence_ends_the_answer_before_it_never_the_reasoning(alice: openai.OpenAI, stream: bool):
    # " END" spans tokens, and so deltas: what may begin it is held back until it is known.
    body = {"model": "echo", "messages": [{"role": "user", "content": STOPPED}], "stop": ["zzz", " END"]}
    if stream:
        chunks = list(alice.chat.completions.create(**body, stream=True, stream_options={"include_usage": True}))
        deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
        content = "".join(delta.content or "" for delta in deltas)
        reasoning = "".join(delta.model_extra.get("reasoning") or "" for delta in deltas)
        finish_reason, usage = chunks[-2].choices[0].finish_reason, chunks[-1].usage
    else:
        completion = alice.chat.completions.create(**body)
        content, finish_reason, usage = (completion.choices[0].message.content, completion.choices[0].finish_reason,
                                         completion.usage)
        reasoning = completion.choices[0].message.model_extra["reasoning"]
    assert (content, finish_reason) == ("Paris is lovely.", "stop")
    assert reasoning == "Think first, END of nothing."
    # The tokens up to the sequence were generated, and count; none after it.
    whole = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": STOPPED}])
    assert usage.completion_tokens < whole.usage.completion_tokens


def test_a_stopped_answers_logprobs_are_those_of_the_tokens_it_shows(alice: openai.OpenAI):
    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": STOPPED}],
                                               stop=[" END"], logprobs=True)
    content = completion.choices[0].message.content
    assert content == "Paris is lovely."
    tokens = completion.choices[0].logprobs.content
    assert b"".join(bytes(entry.bytes) for entry in tokens).decode() == content


def test_the_seed_vllms_sampling_extensions_and_a_template_effort_reach_the_engines_parameters(
        alice: openai.OpenAI, db_access):
    from responses_app.models import Response
    from responses_app.models.response_params import ChatOptions
    from responses_app.worker.sampling import sampling_params

    completion = alice.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": "Hi"}], seed=7, stop="\n\n",
        extra_body={"top_k": 40, "min_p": 0.05, "repetition_penalty": 1.1,
                    "chat_template_kwargs": {"reasoning_effort": "low"}})
    assert completion.choices[0].finish_reason == "stop"
    response = Response.objects.get(pk="resp_" + completion.id.removeprefix("chatcmpl-"))
    params = response.params
    assert params.chat == ChatOptions(stop=("\n\n",), seed=7, top_k=40, min_p=0.05, repetition_penalty=1.1)
    assert params.reasoning.effort == "low"
    engine = sampling_params(response)
    assert (engine.seed, engine.top_k, engine.min_p, engine.repetition_penalty) == (7, 40, 0.05, 1.1)


def test_n_choices_are_n_responses_side_by_side_with_the_prompt_counted_once(alice: openai.OpenAI, db_access):
    from responses_app.models import Response

    messages = [{"role": "user", "content": "Hello there"}]
    one = alice.chat.completions.create(model="echo", messages=messages)
    three = alice.chat.completions.create(model="echo", messages=messages, n=3, seed=7)
    assert [choice.index for choice in three.choices] == [0, 1, 2]
    assert {choice.message.content for choice in three.choices} == {one.choices[0].message.content}
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens
    assert (three.usage.completion_tokens_details.reasoning_tokens
            == 3 * one.usage.completion_tokens_details.reasoning_tokens)
    # Each choice samples with a seed of its own: the same seed would make them all the same.
    first = Response.objects.get(pk="resp_" + three.id.removeprefix("chatcmpl-"))
    seeds = Response.objects.filter(tenant=first.tenant, created_at__gte=first.created_at).values_list(
        "request__chat__seed", flat=True)
    assert sorted(seeds) == [7, 8, 9]


def test_n_choices_with_tools_each_make_their_own_calls(alice: openai.OpenAI):
    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": CALL_SCRIPT}],
                                               tools=[WEATHER], n=2)
    calls = [choice.message.tool_calls for choice in completion.choices]
    assert [choice.finish_reason for choice in completion.choices] == ["tool_calls", "tool_calls"]
    assert [call.function.name for [call] in calls] == ["get_weather", "get_weather"]
    assert calls[0][0].id != calls[1][0].id


def test_n_streamed_choices_interleave_each_with_its_index_then_one_usage_chunk(alice: openai.OpenAI):
    script = reasoning_and_answer("Hm.", "Paris is lovely.")
    chunks = list(alice.chat.completions.create(
        model="echo", messages=[{"role": "user", "content": script}], n=2, stream=True,
        stream_options={"include_usage": True}, metadata={"echo_token_delay_ms": "5"}))
    assert len({chunk.id for chunk in chunks}) == 1
    *choice_chunks, last = chunks
    assert last.choices == [] and last.usage.completion_tokens > 0
    assert all(chunk.usage is None and len(chunk.choices) == 1 for chunk in choice_chunks)
    for index in (0, 1):
        own = [chunk.choices[0] for chunk in choice_chunks if chunk.choices[0].index == index]
        assert own[0].delta.role == "assistant"
        assert "".join(choice.delta.content or "" for choice in own) == "Paris is lovely."
        assert [choice.finish_reason for choice in own][-1] == "stop"
        assert all(choice.finish_reason is None for choice in own[:-1])
    indexes = [chunk.choices[0].index for chunk in choice_chunks]
    assert indexes != sorted(indexes)  # side by side, not one after the other


def test_n_choices_are_created_all_or_none_under_the_foreground_limit(stack, settings, db_access):
    from responses_app.models import Response, Tenant

    settings.TENANT_MAX_CONCURRENT_FOREGROUND = 2
    tenant = new_tenant()
    client = http_client(stack, new_key(tenant))
    answer = client.post("/chat/completions", json={"model": "echo", "n": 3,
                                                     "messages": [{"role": "user", "content": "Hi"}]})
    assert answer.status_code == 429 and answer.json()["error"]["code"] == "concurrency_limit_exceeded"
    assert not Response.objects.filter(tenant__name=tenant).exists()
    Tenant.objects.filter(name=tenant).delete()


# The echo engine writes this verbatim: no valid harmony, so the response fails.
NOT_HARMONY = "<|channel|>final<|message|>Partly<|end|><|start|><|start|>"


def test_a_failed_completion_is_a_500_and_its_stream_ends_with_an_error_chunk(stack, alice_key):
    client = http_client(stack, alice_key)
    whole = client.post("/chat/completions", json={"model": "echo", "messages": [
        {"role": "user", "content": NOT_HARMONY}]})
    assert whole.status_code == 500
    assert whole.json()["error"]["type"] == "server_error" and "not valid harmony" in whole.json()["error"]["message"]

    streamed = client.post("/chat/completions", json={"model": "echo", "stream": True, "messages": [
        {"role": "user", "content": NOT_HARMONY}]})
    frames = [json.loads(frame.removeprefix("data: ")) for frame in streamed.text.split("\n\n")
              if frame.startswith("data: ")]
    assert "".join(frame["choices"][0]["delta"].get("content") or "" for frame in frames[:-1]) == "Partly"
    assert set(frames[-1]) == {"error"} and frames[-1]["error"]["type"] == "server_error"
    assert "[DONE]" not in streamed.text


def test_a_completion_is_an_unstored_response_the_tenant_cannot_list(alice: openai.OpenAI, stack, db_access):
    from responses_app.models import Response

    completion = alice.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Hi"}])
    response_id = "resp_" + completion.id.removeprefix("chatcmpl-")
    assert Response.objects.filter(pk=response_id, store=False).exists()
    with pytest.raises(openai.NotFoundError):
        alice.responses.retrieve(response_id)


def test_a_read_only_key_cannot_create_a_completion(stack, db_access):
    from responses_app.models import ApiKeyScope

    reader = sdk_client(stack, new_key(new_tenant(), scope=ApiKeyScope.READ_ONLY))
    with pytest.raises(openai.PermissionDeniedError):
        reader.chat.completions.create(model="echo", messages=[{"role": "user", "content": "Hi"}])


@pytest.mark.parametrize(("body", "param"), [
    ({"messages": [{"role": "user", "content": "Hi"}]}, "model"),
    ({"model": "echo"}, "messages"),
    ({"model": "echo", "messages": []}, "messages"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "top_k_typo": 1}, "top_k_typo"),
    ({"model": "echo", "messages": [{"role": "robot", "content": "Hi"}]}, "messages[0].role"),
    ({"model": "echo", "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}}]}]}, "messages[0].content[0].type"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "temperature": 3}, "temperature"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "max_completion_tokens": 0},
     "max_completion_tokens"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 0}, "max_tokens"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "response_format": {
        "type": "json_schema", "json_schema": {"name": "a", "schema": {"type": "object"}}}}, "response_format.type"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "store": "yes"}, "store"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "tools": [
        {"type": "function", "function": {"name": "a b"}}]}, "tools[0].function.name"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "n": 0}, "n"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "n": 129}, "n"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "audio": {"voice": "alloy", "format": "mp3"}},
     "audio"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stop": ["a", "b", "c", "d", "e"]}, "stop"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stop": ""}, "stop"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "seed": 2**63}, "seed"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "top_k": -2}, "top_k"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "top_k": 1.5}, "top_k"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "min_p": 1.5}, "min_p"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "repetition_penalty": 0}, "repetition_penalty"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "repetition_penalty": 11},
     "repetition_penalty"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stop": ["x" * 257]}, "stop"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {
        "enable_thinking": False}}, "chat_template_kwargs.enable_thinking"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "chat_template_kwargs": {
        "reasoning_effort": "extreme"}}, "reasoning_effort"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 2}, "top_logprobs"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "logprobs": True, "top_logprobs": 21},
     "top_logprobs"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "tool_choice": {
        "type": "function", "function": {"name": "missing"}}}, "tool_choice.function.name"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stream_options": {"include_usage": True}},
     "stream_options"),
    ({"model": "echo", "messages": [{"role": "assistant"}]}, "messages[0].content"),
    # What gpt-oss cannot honour, each named.
    *[({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], name: value}, name) for name, value in [
        ("modalities", ["text", "audio"]), ("prediction", {"type": "content", "content": "x"}),
        ("web_search_options", {}), ("functions", [{"name": "f"}]), ("function_call", "auto"),
        ("logit_bias", {"50256": -100}), ("moderation", True), ("prompt_cache_options", {})]],
    ({"model": "echo", "messages": [{"role": "user", "content": [
        {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]}]}, "messages[0].content[0].type"),
    ({"model": "echo", "messages": [{"role": "assistant", "content": "x", "audio": {"id": "a"}}]},
     "messages[0].audio"),
    ({"model": "echo", "messages": [{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}]},
     "messages[0].function_call"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "tools": [
        {"type": "custom", "custom": {"name": "c"}}]}, "tools[0].type"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "tools": [WEATHER], "tool_choice": {
        "type": "allowed_tools", "allowed_tools": {"mode": "required", "tools": [{"type": "custom"}]}}},
     "tool_choice.allowed_tools.tools[0]"),
    ({"model": "echo", "messages": [{"role": "tool", "tool_call_id": "call_x", "content": "42"}]}, "messages[0]"),
])
def test_a_bad_request_is_a_400_naming_the_completions_parameter(stack, alice_key, body, param):
    answer = http_client(stack, alice_key).post("/chat/completions", json=body)
    error = assert_openai_error(answer, 400, param)
    assert not error["message"].startswith("Unknown parameter: 'input")
