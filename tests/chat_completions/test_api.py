"""POST /v1/chat/completions through the openai SDK (client.chat.completions.create), in
process with the worker inline: the completion and its stream in Chat Completions' shapes,
a tool loop whose prompt is the one harmony renders for the same Responses items, and bad
requests as OpenAI's 400s naming the completion's own parameter."""

from __future__ import annotations

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
    assert usage.prompt_tokens_details.cached_tokens == 0


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
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "store": True}, "store"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "tools": [
        {"type": "function", "function": {"name": "a b"}}]}, "tools[0].function.name"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "n": 2}, "n"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "audio": {"voice": "alloy", "format": "mp3"}},
     "audio"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stop": ["\n"]}, "stop"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "top_logprobs": 2}, "top_logprobs"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "logprobs": True, "top_logprobs": 21},
     "top_logprobs"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "tool_choice": {
        "type": "function", "function": {"name": "missing"}}}, "tool_choice.function.name"),
    ({"model": "echo", "messages": [{"role": "user", "content": "Hi"}], "stream_options": {"include_usage": True}},
     "stream_options"),
    ({"model": "echo", "messages": [{"role": "assistant"}]}, "messages[0].content"),
    ({"model": "echo", "messages": [{"role": "tool", "tool_call_id": "call_x", "content": "42"}]}, "messages[0]"),
])
def test_a_bad_request_is_a_400_naming_the_completions_parameter(stack, alice_key, body, param):
    answer = http_client(stack, alice_key).post("/chat/completions", json=body)
    error = assert_openai_error(answer, 400, param)
    assert not error["message"].startswith("Unknown parameter: 'input")
