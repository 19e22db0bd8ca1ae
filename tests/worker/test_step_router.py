"""Where each parsed step of the model's output goes (worker/step_router.py), driven by real
harmony output through the real parser, without an engine: the router's state is what
worker/generation.py turns into a turn's ``EarlyStop`` (turn.py) — a call ready to run
(TOOL_CALL), a grammar to go on under (GRAMMAR), a stop sequence reached (STOP_SEQUENCE)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from django.utils import timezone

from responses_app.harmony.encoding import get_encoding
from responses_app.harmony.parser import OutputParser
from responses_app.models import Response, Tenant
from responses_app.models.response_params import ChatOptions, ResponseParams, ToolChoice
from responses_app.stream.builder import EventBuilder
from responses_app.validation.tools import validate_tools
from responses_app.wire.tool_types import ToolReference
from responses_app.worker.step_router import StepRouter
from responses_app.worker.tools.base import ToolResult
from responses_app.worker.tools.client_calls import ClientToolCall
from responses_app.worker.tools.refused_calls import RefusedCall
from responses_app.worker.tools.tool_search_calls import ToolSearchCall

pytestmark = pytest.mark.core

WEATHER = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
GRAMMAR = {"type": "grammar", "syntax": "lark", "definition": 'start: "x"+'}


class StartedCall:
    """A server-side call as the tool loop's starter makes it: it keeps what the model wrote."""

    def __init__(self, recipient: str) -> None:
        self.recipient = recipient
        self.deltas: list[str] = []
        self.arguments: str | None = None

    def delta(self, text: str) -> None:
        self.deltas.append(text)

    def finished(self, text: str) -> None:
        self.arguments = text

    def execute(self) -> ToolResult | None:
        return None


def router_for(tools: list[dict[str, Any]], history: list[dict[str, Any]] | None = None,
               **params: Any) -> StepRouter:
    request = ResponseParams(tools=validate_tools(tools, constrains=True), **params)
    response = Response(id="resp_router", tenant=Tenant(name="t"), model="echo", request={},
                        created_at=timezone.now())

    async def start(recipient: str) -> StartedCall:
        return StartedCall(recipient)

    return StepRouter(request, EventBuilder(response, next_sequence_number=0), history or [], start,
                      logprobs=False, constrains=True)


def write(router: StepRouter, completion: str, until: str | None = None) -> None:
    """Feed the model's ``completion`` token by token, as worker/generation.py does; stop
    after the first token that puts the router in the state ``until`` names."""
    parser = OutputParser(function_namespaces=router.function_namespaces, call_kinds=router.call_kinds)
    for token in get_encoding().encode(completion, allowed_special="all"):
        for step in parser.feed(token):
            router.route(step)
        if router.starting_call is not None:
            asyncio.run(router.start_call())
        if until is not None and getattr(router, until):
            return


def output_types(router: StepRouter) -> list[str]:
    return [item["type"] for item in router.builder.output]


def test_an_answer_goes_to_the_builder_and_readies_no_call():
    router = router_for([WEATHER])
    write(router, "<|channel|>analysis<|message|>Easy.<|end|>"
                  "<|start|>assistant<|channel|>final<|message|>Hi!<|return|>")
    assert output_types(router) == ["reasoning", "message"]
    assert router.take_ready_call() is None and router.grammar is None and not router.stop_reached


def test_a_function_call_is_an_item_of_the_builder_not_a_call_of_the_tool_loop():
    router = router_for([WEATHER])
    write(router, '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city":"Oslo"}<|call|>')
    assert output_types(router) == ["function_call"]
    assert router.builder.output[0]["arguments"] == '{"city":"Oslo"}'
    assert router.take_ready_call() is None


def test_a_server_side_call_is_started_with_the_steps_held_meanwhile_and_ready_when_whole():
    router = router_for([{"type": "code_interpreter", "container": {"type": "auto"}}])
    write(router, "<|channel|>analysis to=python code<|message|>print(6 * 7)<|call|>")
    call = router.take_ready_call()
    assert isinstance(call, StartedCall) and call.recipient == "python"  # the turn ends: TOOL_CALL
    assert "".join(call.deltas) == "print(6 * 7)" and call.arguments == "print(6 * 7)"
    assert output_types(router) == []  # the call's own module makes its item
    assert router.take_ready_call() is None


def test_a_custom_tools_grammar_is_set_when_its_call_begins():
    router = router_for([WEATHER, {"type": "custom", "name": "emit", "format": GRAMMAR},
                         {"type": "custom", "name": "note"}])
    assert router.call_kinds == {"emit": "custom_tool_call", "note": "custom_tool_call"}
    write(router, "<|channel|>commentary to=functions.emit<|message|>xx<|call|>", until="grammar")
    assert router.grammar == GRAMMAR  # the turn goes on under it: GRAMMAR
    free = router_for([{"type": "custom", "name": "note"}])
    write(free, "<|channel|>commentary to=functions.note<|message|>any text<|call|>")
    assert free.grammar is None and output_types(free) == ["custom_tool_call"]


def test_a_call_that_allowed_tools_does_not_allow_is_refused_before_anything_reaches_the_client():
    allowed = ToolChoice(mode="auto", allowed=(ToolReference("function", name="get_time"),))
    router = router_for([WEATHER, {**WEATHER, "name": "get_time"}], tool_choice=allowed)
    write(router, '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{}<|call|>')
    refused = router.take_ready_call()
    assert isinstance(refused, RefusedCall) and output_types(router) == []
    result = refused.execute()
    assert result.author == "functions.get_weather" and "functions.get_time" in result.text


def test_a_client_tools_call_is_read_whole_into_its_typed_item():
    router = router_for([{"type": "shell"}])
    write(router, '<|channel|>commentary to=functions.shell <|constrain|>json<|message|>{"commands":["ls"]}<|call|>')
    call = router.take_ready_call()
    assert isinstance(call, ClientToolCall) and call.execute() is None  # the client runs it
    assert output_types(router) == ["shell_call"]
    assert router.builder.output[0]["action"]["commands"] == ["ls"]


def test_a_server_side_tool_search_loads_the_deferred_tools_it_finds_typed():
    crm = {"type": "namespace", "name": "crm", "description": "Customer records.", "defer_loading": True,
           "tools": [{**WEATHER, "name": "find_customer", "description": "Find a customer by name."}]}
    router = router_for([{"type": "tool_search"}, crm])
    write(router, '<|channel|>commentary to=functions.tool_search <|constrain|>json<|message|>'
                  '{"query":"customer"}<|call|>')
    call = router.take_ready_call()
    assert isinstance(call, ToolSearchCall)
    result = call.execute()
    assert result is not None and [tool.name for tool in result.loaded] == ["crm"]
    assert output_types(router) == ["tool_search_call", "tool_search_output"]
    # The item stores the tool as the request gave it (a namespace deferred whole stays so).
    assert router.builder.output[1]["tools"] == [{**crm, "tools": [{**crm["tools"][0], "strict": True}]}]


def test_a_namespace_that_an_earlier_search_loaded_is_called_as_a_function():
    loaded = {"type": "namespace", "name": "crm", "description": "", "tools": [
        {**WEATHER, "name": "find_customer", "description": None, "strict": True}]}
    history = [{"type": "tool_search_output", "call_id": None, "execution": "server", "tools": [loaded]}]
    router = router_for([{"type": "tool_search"}], history=history)
    assert router.function_namespaces == frozenset({"crm"})
    write(router, '<|channel|>commentary to=crm.find_customer <|constrain|>json<|message|>{}<|call|>')
    assert output_types(router) == ["function_call"] and router.builder.output[0]["namespace"] == "crm"


def test_a_stop_sequence_ends_the_answer_before_it():
    router = router_for([], chat=ChatOptions(stop=("STOP",)))
    write(router, "<|channel|>final<|message|>one two STOP three<|return|>", until="stop_reached")
    assert router.stop_reached  # the turn ends there: STOP_SEQUENCE
    router.builder.finish_open_message()
    assert router.builder.output[0]["content"][0]["text"] == "one two "

