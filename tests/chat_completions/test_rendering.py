"""Chat messages said to gpt-oss, token for token as harmony's own renderer says the same
conversation built by hand with openai_harmony: a tool's result authored by the function
its tool_call_id names, an assistant's content beside its tool_calls on the commentary
channel, a call on commentary with its JSON constraint, the reasoning of the turn in
progress kept through a tool loop and a finished turn's reasoning dropped."""

from __future__ import annotations

import json
from datetime import date

import pytest
from openai_harmony import (
    Author,
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    SystemContent,
    ToolDescription,
)

from responses_app.chat_completions.requests import parse_chat_completion
from responses_app.context.history import fit_prompt
from responses_app.harmony.encoding import get_encoding

DAY = date(2026, 12, 7)
CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = {"type": "function", "function": {"name": "get_weather", "description": "The weather in a city.",
                                            "parameters": CITY}}
CALL = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}


def ours(body: dict) -> list[int]:
    [create] = parse_chat_completion({"model": "echo", **body}).choices()
    return fit_prompt("echo", create.params, create.input_items, [], DAY)[0]


def harmonys(*messages: Message, tools: bool = True, instructions: str | None = None) -> list[int]:
    system = SystemContent.new().with_reasoning_effort(ReasoningEffort.MEDIUM).with_conversation_start_date(
        DAY.isoformat())
    head = [Message.from_role_and_content(Role.SYSTEM, system)]
    if tools or instructions:
        developer = DeveloperContent.new()
        if instructions:
            developer = developer.with_instructions(instructions)
        if tools:
            developer = developer.with_function_tools([ToolDescription.new(
                "get_weather", "The weather in a city.", CITY)])
        head.append(Message.from_role_and_content(Role.DEVELOPER, developer))
    conversation = Conversation.from_messages([*head, *messages])
    return get_encoding().render_conversation_for_completion(conversation, Role.ASSISTANT)


def user(text: str) -> Message:
    return Message.from_role_and_content(Role.USER, text)


def assistant(text: str, channel: str) -> Message:
    return Message.from_role_and_content(Role.ASSISTANT, text).with_channel(channel)


def weather_call(arguments: str = '{"city":"Paris"}') -> Message:
    return (assistant(arguments, "commentary").with_recipient("functions.get_weather")
            .with_content_type("<|constrain|>json"))


def weather_result(text: str) -> Message:
    return (Message.from_author_and_content(Author.new(Role.TOOL, "functions.get_weather"), text)
            .with_channel("commentary").with_recipient("assistant"))


def test_a_tool_loop_in_progress_keeps_its_reasoning_and_says_the_preamble_call_and_result_as_harmony_does():
    body = {"tools": [WEATHER], "messages": [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": "Looking it up.", "reasoning_content": "I should call get_weather.",
         "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"}]}
    assert ours(body) == harmonys(
        user("Weather in Paris?"), assistant("I should call get_weather.", "analysis"),
        assistant("Looking it up.", "commentary"), weather_call(), weather_result("Sunny"),
        instructions="Be brief.")


@pytest.mark.parametrize("name", ["reasoning_content", "reasoning"])
def test_a_finished_turns_reasoning_is_dropped_under_either_name(name: str):
    body = {"messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!", name: "The user greets me."},
        {"role": "user", "content": "How are you?"}]}
    assert ours(body) == harmonys(user("Hi"), assistant("Hello!", "final"), user("How are you?"), tools=False)


def test_two_calls_answered_in_turn_are_each_authored_by_their_function():
    second = {**CALL, "id": "call_2", "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'}}
    body = {"tools": [WEATHER], "messages": [
        {"role": "user", "content": "Paris and Rome?"},
        {"role": "assistant", "tool_calls": [CALL]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "assistant", "tool_calls": [second]},
        {"role": "tool", "tool_call_id": "call_2", "content": json.dumps({"sky": "rain"})}]}
    assert ours(body) == harmonys(
        user("Paris and Rome?"), weather_call(), weather_result("Sunny"),
        weather_call('{"city":"Rome"}'), weather_result('{"sky": "rain"}'))


def test_opening_instructions_join_the_developer_message_and_a_later_one_is_a_message_of_its_own():
    body = {"messages": [
        {"role": "system", "content": "Be brief."}, {"role": "developer", "content": "Answer in French."},
        {"role": "user", "content": "Hi"}, {"role": "system", "content": "Now in English."},
        {"role": "user", "content": "Again"}]}
    later = Message.from_role_and_content(Role.DEVELOPER, DeveloperContent.new().with_instructions("Now in English."))
    assert ours(body) == harmonys(user("Hi"), later, user("Again"), tools=False,
                                  instructions="Be brief.\n\nAnswer in French.")
