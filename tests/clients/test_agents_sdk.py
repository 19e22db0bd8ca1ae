"""The OpenAI Agents SDK (Python) against the live stack: an agent with a function tool,
run to its final output by the SDK's Runner over HTTP and over the Responses WebSocket,
with only the base URL, key and model set."""

from __future__ import annotations

import pytest
from agents import Agent, OpenAIResponsesModel, OpenAIResponsesWSModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from tests.e2e.helpers import function_call_then_answer

# The SDK's tracing exports to OpenAI's platform, which this server is not.
set_tracing_disabled(True)


@function_tool
def get_weather(city: str) -> str:
    """The weather of a city."""
    return f"It is sunny in {city}."


@pytest.mark.parametrize("transport", [OpenAIResponsesModel, OpenAIResponsesWSModel], ids=["http", "websocket"])
def test_an_agent_calls_its_tool_and_gives_its_final_output(stack, client_key, transport):
    client = AsyncOpenAI(base_url=stack.base_url, api_key=client_key, max_retries=0)
    agent = Agent(name="Weather", instructions="Answer questions about the weather.",
                  model=transport(model="echo", openai_client=client), tools=[get_weather])

    result = Runner.run_sync(agent, function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris."))

    assert result.final_output == "Sunny in Paris."
    outputs = [item.output for item in result.new_items if item.type == "tool_call_output_item"]
    assert outputs == ["It is sunny in Paris."]
