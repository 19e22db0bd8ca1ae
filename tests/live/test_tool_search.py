"""Tool search through the openai SDK against the live stack: tools marked defer_loading
stay out of the prompt; the model's search is a tool_search_call item, answered by the
client (execution "client", as Codex runs it) or by the server, and the tools it loads are
the model's to call from there on."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import ResponseToolSearchCall, ResponseToolSearchOutputItem

from tests.helpers import assert_dense, events_of

pytestmark = pytest.mark.core

CUSTOMER = {"type": "function", "name": "get_customer", "description": "Look a customer up by their email address.",
            "parameters": {"type": "object", "properties": {"email": {"type": "string"}}}}
CRM = {"type": "namespace", "name": "crm", "description": "The customer database.",
       "tools": [{**CUSTOMER, "defer_loading": True}]}
CLIENT_SEARCH = {"type": "tool_search", "execution": "client", "description": "Find more tools.",
                 "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}
WEATHER = {"type": "function", "name": "get_weather", "description": "The weather forecast of a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}, "defer_loading": True}
TIME = {"type": "function", "name": "get_time", "description": "The local time in a time zone.",
        "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}, "defer_loading": True}


def call(recipient: str, arguments: dict) -> str:
    return f"<|channel|>commentary to={recipient} <|constrain|>json<|message|>{json.dumps(arguments)}<|call|>"


def test_deferred_tools_stay_out_of_the_prompt_until_searched(alice):
    count = alice.responses.input_tokens.count
    with_deferred = count(model="echo", input="Hi", tools=[CLIENT_SEARCH, CRM]).input_tokens
    assert with_deferred == count(model="echo", input="Hi", tools=[CLIENT_SEARCH]).input_tokens
    loaded = count(model="echo", input="Hi", tools=[CLIENT_SEARCH, {**CRM, "tools": [CUSTOMER]}]).input_tokens
    assert loaded > with_deferred


def test_a_client_search_is_a_tool_search_call_and_its_output_loads_the_tools(alice):
    script = call("functions.tool_search", {"query": "customer email"}) + "<|start|>assistant" + call(
        "crm.get_customer", {"email": "ada@example.com"})
    events = events_of(alice.responses.create(model="echo", input=script, tools=[CLIENT_SEARCH, CRM], stream=True))
    assert_dense(events)
    first = alice.responses.retrieve(events[0]["response"]["id"])
    [searched] = first.output
    assert isinstance(searched, ResponseToolSearchCall) and searched.execution == "client"
    assert searched.arguments == {"query": "customer email"} and searched.call_id
    assert first.tools[1].tools[0].defer_loading is True  # echoed as given

    # The client loads the namespace (as Codex does: its functions marked defer_loading, and
    # the namespace no longer among the request's tools).
    second = alice.responses.create(model="echo", previous_response_id=first.id, tools=[CLIENT_SEARCH], input=[
        {"type": "tool_search_output", "call_id": searched.call_id, "execution": "client", "tools": [CRM]}])
    [called] = second.output
    assert (called.type, called.namespace, called.name) == ("function_call", "crm", "get_customer")
    assert json.loads(called.arguments) == {"email": "ada@example.com"}
    [stored] = alice.responses.input_items.list(second.id).data
    assert isinstance(stored, ResponseToolSearchOutputItem) and stored.tools[0].name == "crm"


def test_a_server_search_loads_the_best_matches_and_the_model_calls_one(alice):
    told = "<|channel|>analysis<|message|>Told: {tool_output}<|end|><|start|>assistant"
    script = (call("functions.tool_search", {"query": "weather forecast", "limit": 1}) + "<|start|>assistant"
              + told + call("functions.get_weather", {"city": "Oslo"}))
    response = alice.responses.create(model="echo", input=script, tools=[{"type": "tool_search"}, WEATHER, TIME])
    searched, output, reasoning, called = response.output
    assert (searched.type, searched.execution, searched.arguments) == (
        "tool_search_call", "server", {"query": "weather forecast", "limit": 1})
    # As OpenAI's hosted search: no call_id (the AI SDK tells a server's search from a client's by it).
    assert isinstance(output, ResponseToolSearchOutputItem) and searched.call_id is None and output.call_id is None
    assert [tool.name for tool in output.tools] == ["get_weather"]
    assert reasoning.content[0].text == "Told: Loaded these tools; you can call them now: functions.get_weather."
    assert (called.type, called.name) == ("function_call", "get_weather")


def test_an_additional_tools_item_declares_its_tools_where_it_stands(alice):
    # The tools are the model's from that item on (a developer message of their own), and
    # the namespace is known to the parser: the call comes back with it.
    script = call("crm.get_customer", {"email": "bo@example.com"})
    response = alice.responses.create(model="echo", input=[
        {"type": "additional_tools", "role": "developer", "tools": [{**CRM, "tools": [CUSTOMER]}]},
        {"role": "user", "content": script}])
    [called] = response.output
    assert (called.type, called.namespace, called.name) == ("function_call", "crm", "get_customer")
    [added, _] = alice.responses.input_items.list(response.id, order="asc").data
    assert added.type == "additional_tools" and added.tools[0].name == "crm"
    count = alice.responses.input_tokens.count
    assert count(model="echo", input=[{"type": "additional_tools", "role": "developer", "tools": [CUSTOMER]},
                                      {"role": "user", "content": "Hi"}]).input_tokens > count(
        model="echo", input="Hi").input_tokens


def test_a_server_search_ignores_a_description_meant_for_a_client_search(alice):
    response = alice.responses.create(model="echo", input="Hi", tools=[
        {"type": "tool_search", "execution": "server", "description": "Only for client searches."}, WEATHER])
    assert response.status == "completed" and response.tools[0].description is None


@pytest.mark.parametrize(("tools", "extra", "param"), [
    ([WEATHER], {}, "tools[0]"),
    ([{"type": "tool_search"}, {"type": "tool_search", "execution": "client"}], {}, "tools[1].type"),
    ([CLIENT_SEARCH], {"input": [{"type": "tool_search_output", "call_id": "c", "tools": [
        {"type": "code_interpreter", "container": {"type": "auto"}}]}]}, "input[0].tools[0].type"),
    ([CLIENT_SEARCH], {"input": [{"type": "tool_search_call", "call_id": "c", "arguments": "q"}]},
     "input[0].arguments"),
    ([], {"input": [{"type": "additional_tools", "role": "developer", "tools": [{"type": "web_search"}]}]},
     "input[0].tools[0].type"),
])
def test_bad_tool_searches_are_a_400_naming_the_parameter(alice, tools, extra, param):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", **{"input": "Hi", **extra}, tools=tools)
    assert raised.value.body["param"] == param
