"""The Node clients (pinned in tests/clients/package.json, Node 22 from npm): the Vercel AI
SDK's multi-step tool loop (through Responses, and through Chat Completions with its
openai-compatible provider), the openai Node SDK (Responses, and its Chat Completions tool
runner) and the Agents SDK for JS, against the live stack, with only the base URL, key and
model set."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.helpers import function_call_then_answer

CLIENTS = Path(__file__).parent
NODE = CLIENTS / "node_modules" / ".bin" / "node"


def run_node(script: str, base_url: str, key: str, prompt: str, model: str = "echo") -> dict:
    assert NODE.exists(), "Node 22 is not installed here: run `make clients` (make test does)"
    finished = subprocess.run([str(NODE), script], cwd=CLIENTS, capture_output=True, text=True, timeout=120,
                              env={**os.environ, "BASE_URL": base_url, "API_KEY": key, "MODEL": model,
                                   "PROMPT": prompt})
    assert finished.returncode == 0, finished.stdout + finished.stderr
    return json.loads(finished.stdout.strip().splitlines()[-1])


def assert_a_weather_loop(result: dict) -> None:
    """The AI SDK's two steps (ai_sdk_steps.mjs): the call with its reasoning shown and the
    tool's result, then the answer."""
    first, last = result["steps"][0], result["steps"][-1]
    assert first["finishReason"] == "tool-calls"
    assert first["toolCalls"] == [{"name": "get_weather", "input": {"city": "Paris"}}]
    assert first["toolResults"] == ["It is sunny in Paris."]
    assert first["reasoningText"] == "I should call get_weather."
    assert (last["finishReason"], result["text"]) == ("stop", "Sunny in Paris.")


def test_the_ai_sdk_runs_a_multi_step_tool_loop_with_its_reasoning_shown(stack, client_key):
    prompt = function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris.")

    # The AI SDK sends no reasoning options for a model it does not know: the model's
    # registry entry asks for summaries (reasoning_summary), as an operator would set it.
    result = run_node("ai_sdk_tool_loop.mjs", stack.base_url, client_key, prompt, model="echo-summarized")

    # Its reasoning display reads the summary the model wrote; the second step sends the
    # first step's items back (by item_reference: store is true).
    assert_a_weather_loop(result)


def test_the_node_sdk_streams_continues_and_retrieves(stack, client_key):
    result = run_node("node_sdk_stream.mjs", stack.base_url, client_key, "Hello from Node")

    assert result["types"][0] == "response.created" and result["types"][-1] == "response.completed"
    assert result["streamedStatus"] == "completed" and "Hello from Node" in result["storedText"]
    assert result["previous"] == result["firstId"] and "Again." in result["secondText"]


def test_the_agents_sdk_for_js_runs_an_agent_with_a_tool(stack, client_key):
    prompt = function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris.")

    result = run_node("agents_sdk_tool_loop.mjs", stack.base_url, client_key, prompt)

    assert result == {"finalOutput": "Sunny in Paris.", "outputs": ["It is sunny in Paris."]}


def test_the_ai_sdks_openai_compatible_provider_runs_a_streamed_tool_loop_with_its_reasoning_shown(
        stack, client_key):
    prompt = function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris.")

    result = run_node("ai_sdk_compatible_tool_loop.mjs", stack.base_url, client_key, prompt)

    # Its reasoning display reads the streamed reasoning deltas (reasoning_content); the
    # second step sends the call, its reasoning and its result back as messages.
    assert_a_weather_loop(result)
    assert result["outputTokens"] > 0


def test_the_node_sdks_chat_completions_tool_runner_stores_and_retrieves(stack, client_key):
    prompt = function_call_then_answer("get_weather", '{"city": "Paris"}', "Sunny in Paris.")

    result = run_node("node_sdk_chat_tools.mjs", stack.base_url, client_key, prompt)

    assert (result["finalContent"], result["cities"]) == ("Sunny in Paris.", ["Paris"])
    assert result["finishReasons"] == ["tool_calls", "stop"]
    assert (result["storedContent"], result["storedMetadata"]) == ("Sunny in Paris.", {"client": "node"})
    assert result["messageRoles"] == ["user", "assistant", "tool"]
