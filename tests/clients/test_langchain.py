"""LangChain (``langchain-openai``'s ChatOpenAI on the Responses API) against the live
stack: a tool loop, as a LangChain user writes it, with only the base URL, key and model
set."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, ToolMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

from tests.helpers import function_call_then_answer


@tool
def get_weather(city: str) -> str:
    """The weather of a city."""
    return f"It is sunny in {city}."


def test_a_langchain_tool_loop_runs_on_the_responses_api(stack, client_key):
    model = ChatOpenAI(model="echo", base_url=stack.base_url, api_key=client_key, use_responses_api=True,
                       reasoning={"effort": "low", "summary": "auto"}, max_retries=0)
    agent = model.bind_tools([get_weather])
    messages = [HumanMessage(function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris."))]

    first = agent.invoke(messages)
    [call] = first.tool_calls
    assert (call["name"], call["args"]) == ("get_weather", {"city": "Paris"})
    messages += [first, ToolMessage(get_weather.invoke(call["args"]), tool_call_id=call["id"])]
    second = agent.invoke(messages)

    assert second.text == "Sunny in Paris."
    reasoning = [block for block in first.content if isinstance(block, dict) and block.get("type") == "reasoning"]
    assert reasoning and reasoning[0]["summary"][0]["text"] == "I should call get_weather."
