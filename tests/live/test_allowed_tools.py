"""``tool_choice: {"type": "allowed_tools", ...}`` through the openai SDK against the live
stack: every tool stays in the prompt, a call the model makes to a tool that is not
allowed never reaches the client (the model is told so and goes on), and ``required``
starts the model on a call."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import ResponseFunctionToolCall, ToolChoiceAllowed

from tests.helpers import assert_dense, events_of

pytestmark = pytest.mark.core

TOOLS = [{"type": "function", "name": name, "description": f"Get the {name[4:]}",
          "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}
         for name in ("get_weather", "get_time")]
TOLD = "<|channel|>analysis<|message|>Told: {tool_output}<|end|><|start|>assistant"


def call(name: str, city: str) -> str:
    return (f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
            f"{json.dumps({'city': city})}<|call|>")


def allowed(mode: str, *names: str) -> dict:
    return {"type": "allowed_tools", "mode": mode, "tools": [{"type": "function", "name": name} for name in names]}


def test_a_call_outside_the_allowed_tools_is_refused_to_the_model_and_never_streamed(alice):
    script = call("get_weather", "Paris") + "<|start|>assistant" + TOLD + call("get_time", "Paris")
    events = events_of(alice.responses.create(model="echo", input=script, tools=TOOLS, stream=True,
                                              tool_choice=allowed("auto", "get_time")))
    assert_dense(events)
    response = alice.responses.retrieve(events[0]["response"]["id"])
    assert isinstance(response.tool_choice, ToolChoiceAllowed) and response.tool_choice.mode == "auto"
    reasoning, called = response.output
    assert isinstance(called, ResponseFunctionToolCall)
    assert (called.name, json.loads(called.arguments)) == ("get_time", {"city": "Paris"})
    told = reasoning.content[0].text
    assert told.startswith("Told: Error: functions.get_weather may not be called in this turn.")
    assert "functions.get_time" in told and "or answer without a tool" in told
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert [(item["type"], item.get("name")) for item in added] == [("reasoning", None), ("function_call", "get_time")]
    assert "".join(e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta") \
        == called.arguments


def test_allowed_tools_required_with_one_tool_starts_the_model_on_its_call(alice):
    # The header of get_time's call is prefilled; the echo engine writes the arguments on.
    response = alice.responses.create(model="echo", input=call("get_time", "Oslo"), tools=TOOLS,
                                      tool_choice=allowed("required", "get_time"))
    [called] = response.output
    assert (called.type, called.name, called.status) == ("function_call", "get_time", "completed")
    assert json.loads(called.arguments) == {"city": "Oslo"}
    assert response.tool_choice.mode == "required" and response.tool_choice.tools == [
        {"type": "function", "name": "get_time"}]


REQUIRED_TWO = {"type": "allowed_tools", "mode": "required",
                "tools": [{"type": "function", "name": "get_time"}, {"type": "shell"}]}


def test_allowed_tools_required_forces_the_call_again_after_a_refused_pick(alice):
    # Required with two tools: the model is started on a call and picks the recipient; a
    # refused pick is forced again, so the next call is an allowed one.
    script = call("get_weather", "Rome") + "<|start|>assistant" + call("get_time", "Rome")
    response = alice.responses.create(model="echo", input=script, tools=[*TOOLS, {"type": "shell"}],
                                      tool_choice=REQUIRED_TWO)
    [called] = response.output
    assert (called.type, called.name, json.loads(called.arguments)) == ("function_call", "get_time", {"city": "Rome"})
    assert response.status == "completed"


@pytest.mark.parametrize("script", [
    "<|channel|>final<|message|>No call.<|return|>",
    call("get_weather", "Rome") + "<|start|>assistant<|channel|>final<|message|>No call.<|return|>",
], ids=["at-once", "after-a-refused-call"])
def test_allowed_tools_required_refuses_an_answer_without_a_call_of_them(alice, script: str):
    # The model leaves the prefilled recipient empty and answers: refused and forced again,
    # never streamed; the echo engine answers so every time, until the turns run out.
    events = events_of(alice.responses.create(model="echo", input=script, tools=[*TOOLS, {"type": "shell"}],
                                              tool_choice=REQUIRED_TWO, stream=True))
    assert_dense(events)
    response = alice.responses.retrieve(events[0]["response"]["id"])
    assert (response.status, response.error.message) == (
        "failed", "The model was still calling tools after 64 turns.")
    assert response.output == [] and not [e for e in events if e["type"] == "response.output_text.delta"]


def test_an_allowed_tool_that_is_not_in_tools_is_a_400(alice):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", tools=TOOLS, tool_choice=allowed("auto", "get_date"))
    assert raised.value.body["param"] == "tool_choice.tools[0].name"
