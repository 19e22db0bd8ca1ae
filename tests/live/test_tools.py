"""The tool loop end to end: echo scripts drive the model's side, everything else is real
(Daphne, the Celery worker, PostgreSQL, Redis, the bubblewrap sandbox, an MCP server on
127.0.0.1, the local search index), and every stream goes through the SDK's strict
``client.responses.stream()`` accumulator."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.helpers import assert_dense
from tests.live.stack import LiveStack, free_port
from tests.tools.mcp_server import start_mcp_server

CODE_INTERPRETER = {"type": "code_interpreter", "container": {"type": "auto"}}
OUTPUTS = ["code_interpreter_call.outputs"]


def python_call(code: str) -> str:
    return f"<|start|>assistant to=python<|channel|>analysis code<|message|>{code}<|call|>"


def mcp_call(label: str, name: str, arguments: dict[str, Any]) -> str:
    return (f"<|start|>assistant<|channel|>commentary to={label}.{name} <|constrain|>json"
            f"<|message|>{json.dumps(arguments)}<|call|>")


def browser_call(function: str, arguments: dict[str, Any]) -> str:
    return f"<|start|>assistant to=browser.{function}<|channel|>analysis code<|message|>{json.dumps(arguments)}<|call|>"


def final(text: str) -> str:
    return f"<|start|>assistant<|channel|>final<|message|>{text}<|return|>"


def script(*steps: str) -> str:
    """An echo script: a first reasoning message, then the steps, one engine turn each."""
    return "<|channel|>analysis<|message|>Let me use my tools.<|end|>" + "".join(steps)


def stream_response(client: openai.OpenAI, **request: Any) -> tuple[list[dict[str, Any]], Any]:
    """All events (as dicts) and the final Response, through the SDK's accumulator (which
    only hands out a completed response; a failed or incomplete one comes from its event)."""
    with client.responses.stream(model="echo", **request) as stream:
        events = [event.to_dict() for event in stream]
        if events[-1]["type"] == "response.completed":
            response = stream.get_final_response()
        else:
            response = openai.types.responses.Response.model_validate(events[-1]["response"])
    assert_dense(events)
    assert_no_duplicates(events)
    return events, response


def assert_no_duplicates(events: list[dict[str, Any]]) -> None:
    """Each item is added once and done once, and the output indices do not repeat."""
    added = Counter(event["item"]["id"] for event in events if event["type"] == "response.output_item.added")
    done = Counter(event["item"]["id"] for event in events if event["type"] == "response.output_item.done")
    assert all(count == 1 for count in added.values()), added
    assert added == done
    indices = [event["output_index"] for event in events if event["type"] == "response.output_item.added"]
    assert indices == list(range(len(indices)))


def item_events(events: list[dict[str, Any]], item_id: str) -> list[str]:
    return [event["type"] for event in events
            if event.get("item_id") == item_id or (event.get("item") or {}).get("id") == item_id]


def of_type(response: Any, item_type: str) -> list[Any]:
    return [item for item in response.output if item.type == item_type]


# --- code interpreter ---------------------------------------------------------------------------


def test_python_calls_keep_state_across_calls_and_across_responses_of_one_container(alice):
    events, first = stream_response(alice, tools=[CODE_INTERPRETER], include=OUTPUTS, input=script(
        python_call("x = 6 * 7\nprint(x)"),
        python_call("open('/mnt/data/note.txt', 'w').write('kept')\nx + 1"),
        final("The tool said: {tool_output}")))
    assert first.status == "completed"
    calls = of_type(first, "code_interpreter_call")
    assert [call.status for call in calls] == ["completed", "completed"]
    assert calls[0].outputs[0].logs.strip() == "42"
    assert "43" in calls[1].outputs[0].logs
    assert calls[0].container_id == calls[1].container_id and calls[0].container_id.startswith("cntr_")
    assert "43" in first.output_text  # the model read the second call's output
    assert item_events(events, calls[0].id) == [
        "response.output_item.added", "response.code_interpreter_call.in_progress",
        *["response.code_interpreter_call_code.delta"] * sum(
            1 for e in events if e["type"] == "response.code_interpreter_call_code.delta"
            and e["item_id"] == calls[0].id),
        "response.code_interpreter_call_code.done", "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call.completed", "response.output_item.done"]
    assert calls[0].code == "x = 6 * 7\nprint(x)"

    # A second response names the container: its variables and files are still there.
    tool = {"type": "code_interpreter", "container": calls[0].container_id}
    _, second = stream_response(alice, tools=[tool], include=OUTPUTS, input=script(
        python_call("print(x * 2, open('/mnt/data/note.txt').read())"), final("ok")))
    [call] = of_type(second, "code_interpreter_call")
    assert call.container_id == calls[0].container_id
    assert call.outputs[0].logs.strip() == "84 kept"


def test_auto_container_is_reused_along_a_previous_response_chain(alice):
    _, first = stream_response(alice, tools=[CODE_INTERPRETER], input=script(python_call("y = 'chained'"),
                                                                              final("set")))
    _, second = stream_response(alice, tools=[CODE_INTERPRETER], include=OUTPUTS, previous_response_id=first.id,
                                input=script(python_call("print(y)"), final("{tool_output}")))
    assert of_type(second, "code_interpreter_call")[0].container_id == \
        of_type(first, "code_interpreter_call")[0].container_id
    assert second.output_text == "chained\n"


def test_outputs_are_left_out_unless_included_but_always_reach_the_model(alice):
    _, response = stream_response(alice, tools=[CODE_INTERPRETER], input=script(
        python_call("print('secret sauce')"), final("{tool_output}")))
    [call] = of_type(response, "code_interpreter_call")
    assert call.outputs is None
    assert response.output_text.strip() == "secret sauce"
    assert alice.responses.retrieve(response.id).output[1].outputs is None
    included = alice.responses.retrieve(response.id, include=OUTPUTS)
    assert included.output[1].outputs[0].logs.strip() == "secret sauce"


def test_a_failing_call_is_failed_with_its_error_and_the_model_reads_it(alice):
    _, response = stream_response(alice, tools=[CODE_INTERPRETER], include=OUTPUTS, input=script(
        python_call("1 / 0"), python_call("print('still alive')"), final("{tool_output}")))
    failed, alive = of_type(response, "code_interpreter_call")
    assert failed.status == "failed" and "ZeroDivisionError" in failed.outputs[0].logs
    assert alive.status == "completed"
    assert response.status == "completed" and response.output_text.strip() == "still alive"


def test_a_call_that_runs_forever_times_out_and_the_response_goes_on(alice, stack: LiveStack):
    _, response = stream_response(alice, tools=[CODE_INTERPRETER], include=OUTPUTS, input=script(
        python_call("while True:\n    pass"), final("after the timeout: {tool_output}")))
    [call] = of_type(response, "code_interpreter_call")
    assert call.status == "failed"
    assert "timed out" in call.outputs[0].logs.lower()
    assert response.status == "completed" and "timed out" in response.output_text.lower()


def test_file_outputs_are_links_that_only_their_tenant_can_read(alice, bob, stack: LiveStack, alice_key, bob_key):
    png = "import base64\nopen('/mnt/data/dot.png','wb').write(base64.b64decode(" \
          "'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=='))"
    _, response = stream_response(alice, tools=[CODE_INTERPRETER], include=OUTPUTS,
                                  input=script(python_call(png), final("drawn")))
    [call] = of_type(response, "code_interpreter_call")
    [image] = [output for output in call.outputs if output.type == "image"]
    [file] = alice.containers.files.list(call.container_id)
    assert (file.path, file.source) == ("/mnt/data/dot.png", "assistant")
    assert image.url.endswith(f"/v1/containers/{call.container_id}/files/{file.id}/content")
    assert alice.containers.files.content.retrieve(file.id, container_id=call.container_id).read().startswith(
        b"\x89PNG")
    own = httpx.get(image.url, headers={"Authorization": f"Bearer {alice_key}"})
    assert own.status_code == 200 and own.content.startswith(b"\x89PNG")
    other = httpx.get(image.url, headers={"Authorization": f"Bearer {bob_key}"})
    assert other.status_code == 404 and other.json()["error"]["type"] == "invalid_request_error"


def test_another_tenants_container_cannot_be_used(alice, bob):
    _, response = stream_response(alice, tools=[CODE_INTERPRETER],
                                  input=script(python_call("z = 'alice-only'"), final("ok")))
    container = of_type(response, "code_interpreter_call")[0].container_id
    _, stolen = stream_response(bob, tools=[{"type": "code_interpreter", "container": container}], include=OUTPUTS,
                                input=script(python_call("print(z)"), final("{tool_output}")))
    [call] = of_type(stolen, "code_interpreter_call")
    assert call.status == "failed" and "not found" in call.outputs[0].logs
    assert "alice-only" not in stolen.output_text


# --- limits, tool_choice, functions ---------------------------------------------------------------


def test_past_max_tool_calls_the_model_is_told_the_tool_is_unavailable(alice):
    _, response = stream_response(alice, tools=[CODE_INTERPRETER], include=OUTPUTS, max_tool_calls=1, input=script(
        python_call("print('one')"), python_call("print('two')"), final("{tool_output}")))
    first, second = of_type(response, "code_interpreter_call")
    assert first.status == "completed" and first.outputs[0].logs.strip() == "one"
    assert second.status == "failed" and "max_tool_calls" in second.outputs[0].logs
    assert "unavailable" in response.output_text and response.max_tool_calls == 1


def test_max_output_tokens_counts_every_turn(alice):
    _, unbounded = stream_response(alice, tools=[CODE_INTERPRETER], input=script(
        python_call("print(1)"), final("a fairly long final answer that takes a good number of tokens")))
    # Each turn alone is far below this budget; all of them together are not.
    budget = unbounded.usage.output_tokens - 3
    _, bounded = stream_response(alice, tools=[CODE_INTERPRETER], max_output_tokens=budget, input=script(
        python_call("print(1)"), final("a fairly long final answer that takes a good number of tokens")))
    assert bounded.status == "incomplete" and bounded.incomplete_details.reason == "max_output_tokens"
    assert bounded.usage.output_tokens == budget
    assert of_type(bounded, "code_interpreter_call")[0].status == "completed"


def test_a_client_function_call_ends_the_response_after_server_side_calls(alice):
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    calls = script(python_call("print('local')"),
                   "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
                   '<|message|>{"city": "Paris"}<|call|>', final("Sunny, says {tool_output}"))
    _, response = stream_response(alice, tools=[CODE_INTERPRETER, weather], input=calls)
    assert [item.type for item in response.output] == ["reasoning", "code_interpreter_call", "function_call"]
    call = response.output[-1]
    _, answer = stream_response(alice, tools=[CODE_INTERPRETER, weather], previous_response_id=response.id,
                                input=[{"type": "function_call_output", "call_id": call.call_id, "output": "22C"}])
    assert answer.output_text == "Sunny, says 22C"


def test_a_named_tool_choice_prefills_the_call(alice):
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    forced = ('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Oslo"}<|call|>'
              + final("done"))
    _, response = stream_response(alice, tools=[weather], tool_choice={"type": "function", "name": "get_weather"},
                                  input=forced)
    [call] = response.output
    assert call.type == "function_call" and call.name == "get_weather" and call.arguments == '{"city": "Oslo"}'
    assert response.tool_choice.name == "get_weather"


@pytest.mark.parametrize("extra_tools", [[], [CODE_INTERPRETER]], ids=["one-tool", "two-tools"])
def test_tool_choice_required_prefills_a_call_header(alice, extra_tools):
    weather = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    call = '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Rome"}<|call|>'
    _, response = stream_response(alice, tools=[weather, *extra_tools], tool_choice="required",
                                  input=call + final("done"))
    [item] = response.output
    assert (item.type, item.name, item.arguments) == ("function_call", "get_weather", '{"city": "Rome"}')


def test_tool_choice_none_offers_no_tools_and_a_call_fails_the_response(alice):
    _, response = stream_response(alice, tools=[CODE_INTERPRETER], tool_choice="none",
                                  input=script(python_call("print(1)"), final("no")))
    assert response.status == "failed" and "python" in response.error.message


# --- MCP ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mcp_url() -> Iterator[str]:
    url, process = start_mcp_server("streamable_http")
    try:
        yield url
    finally:
        process.kill()
        process.wait(timeout=10)


def mcp_tool(url: str, **extra: Any) -> dict[str, Any]:
    return {"type": "mcp", "server_label": "demo", "server_url": url, "require_approval": "never", **extra}


def test_mcp_tools_are_listed_once_per_conversation_and_called(alice, mcp_url):
    events, response = stream_response(alice, tools=[mcp_tool(mcp_url)], input=script(
        mcp_call("demo", "add", {"a": 2, "b": 3}), final("The sum is {tool_output}.")))
    listing, call = response.output[0], response.output[2]
    assert listing.type == "mcp_list_tools" and {"add", "echo", "fail"} <= {tool.name for tool in listing.tools}
    assert item_events(events, listing.id) == ["response.output_item.added", "response.mcp_list_tools.in_progress",
                                               "response.mcp_list_tools.completed", "response.output_item.done"]
    assert call.type == "mcp_call" and call.status == "completed" and call.output == "5"
    assert call.arguments == '{"a": 2, "b": 3}' and call.server_label == "demo"
    kinds = item_events(events, call.id)
    assert kinds[:2] == ["response.output_item.added", "response.mcp_call.in_progress"]
    assert "response.mcp_call_arguments.delta" in kinds
    assert kinds[-3:] == ["response.mcp_call_arguments.done", "response.mcp_call.completed",
                          "response.output_item.done"]
    assert response.output_text == "The sum is 5."

    _, later = stream_response(alice, tools=[mcp_tool(mcp_url)], previous_response_id=response.id, input=script(
        mcp_call("demo", "echo", {"text": "again"}), final("{tool_output}")))
    assert [item.type for item in later.output] == ["reasoning", "mcp_call", "message"]  # no second listing
    assert later.output_text == "again"


def test_allowed_tools_narrow_the_listing(alice, mcp_url):
    _, response = stream_response(alice, tools=[mcp_tool(mcp_url, allowed_tools=["echo"])],
                                  input=script(final("nothing to do")))
    assert [tool.name for tool in response.output[0].tools] == ["echo"]


def test_a_failing_mcp_tool_is_a_failed_call_and_the_response_goes_on(alice, mcp_url):
    _, response = stream_response(alice, tools=[mcp_tool(mcp_url)], input=script(
        mcp_call("demo", "fail", {"message": "the disk is on fire"}), final("Saw: {tool_output}")))
    [call] = of_type(response, "mcp_call")
    assert call.status == "failed" and call.error.type == "mcp_tool_execution_error"
    assert "the disk is on fire" in json.dumps(call.error.content)
    assert response.status == "completed" and "the disk is on fire" in response.output_text


def test_a_slow_mcp_tool_times_out(alice, mcp_url):
    _, response = stream_response(alice, tools=[mcp_tool(mcp_url)], input=script(
        mcp_call("demo", "slow", {"seconds": 30}), final("{tool_output}")))
    [call] = of_type(response, "mcp_call")
    assert call.status == "failed" and call.error.type == "mcp_protocol_error"
    assert "did not answer within 6 seconds" in call.error.message


@pytest.mark.parametrize("approve", [True, False])
def test_an_approval_request_ends_the_response_and_the_answer_runs_or_skips_the_call(alice, mcp_url, approve):
    tool = mcp_tool(mcp_url, require_approval="always")
    _, asking = stream_response(alice, tools=[tool], input=script(
        mcp_call("demo", "add", {"a": 20, "b": 22}), final("Result: {tool_output}")))
    assert asking.status == "completed"
    request = asking.output[-1]
    assert request.type == "mcp_approval_request" and request.name == "add"
    assert json.loads(request.arguments) == {"a": 20, "b": 22}
    assert not of_type(asking, "mcp_call")

    _, answered = stream_response(alice, tools=[tool], previous_response_id=asking.id, input=[
        {"type": "mcp_approval_response", "approval_request_id": request.id, "approve": approve}])
    calls = of_type(answered, "mcp_call")
    if approve:
        assert [(call.output, call.approval_request_id) for call in calls] == [("42", request.id)]
        assert answered.output_text == "Result: 42"
    else:
        assert calls == []
        assert "declined" in answered.output_text


@pytest.mark.parametrize("host", ["127.0.0.2", "10.255.255.1", "169.254.169.254"])
def test_an_mcp_server_on_a_private_address_is_refused_when_the_response_is_created(alice, mcp_url, host):
    url = mcp_url.replace("127.0.0.1", host)
    with pytest.raises(openai.BadRequestError) as refused:
        alice.responses.create(model="echo", tools=[mcp_tool(url)], input=script(final("never")))
    error = refused.value.body
    assert (error["param"], error["code"]) == ("tools[0].server_url", "invalid_url")
    assert "TOOLS_ALLOWED_PRIVATE_HOSTS" in error["message"]


def test_an_unreachable_mcp_server_fails_the_response_with_a_clear_error(alice):
    url = f"http://127.0.0.1:{free_port()}/mcp"
    _, response = stream_response(alice, tools=[mcp_tool(url)], input=script(final("never")))
    assert response.status == "failed" and "demo" in response.error.message
    [item] = response.output
    assert (item.type, item.server_label, item.tools) == ("mcp_list_tools", "demo", [])
    assert f"Cannot reach the MCP server 'demo' ({url.rsplit('/', 1)[0]})" in item.error


# --- web search ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def search_index(live_stack: LiveStack) -> None:
    from tools_app.browser.backends import Document
    from tools_app.browser.local_index import LocalIndex

    index = LocalIndex(live_stack.search_index_path)
    index.add([
        Document("https://docs.example.org/tides", "Tides of the North Sea",
                 "Tides in the North Sea are semi-diurnal.\nThe tidal range at Dover is about six metres."),
        Document("https://docs.example.org/bread", "Sourdough basics",
                 "A sourdough starter is flour and water.\nIt needs feeding every day."),
    ])


def test_web_search_opens_pages_and_cites_them(alice, search_index):
    events, response = stream_response(alice, tools=[{"type": "web_search"}], input=script(
        browser_call("search", {"query": "tidal range Dover"}),
        browser_call("open", {"id": 0}),
        browser_call("find", {"pattern": "Dover"}),
        final("The range at Dover is about six metres 【1†L2】.")))
    searches = of_type(response, "web_search_call")
    assert [call.action.type for call in searches] == ["search", "open_page", "find_in_page"]
    assert searches[0].action.query == "tidal range Dover"
    assert searches[1].action.url == "https://docs.example.org/tides"
    assert searches[2].action.pattern == "Dover"
    assert item_events(events, searches[0].id) == [
        "response.output_item.added", "response.web_search_call.in_progress", "response.web_search_call.searching",
        "response.web_search_call.completed", "response.output_item.done"]
    [part] = response.output[-1].content
    [citation] = part.annotations
    assert citation.type == "url_citation" and citation.url == "https://docs.example.org/tides"
    assert part.text[citation.start_index:citation.end_index] == "【1†L2】"
    assert any(event["type"] == "response.output_text.annotation.added" for event in events)


def test_search_sources_are_shown_only_when_included(alice, search_index):
    request = {"tools": [{"type": "web_search_preview"}],
               "input": script(browser_call("search", {"query": "sourdough"}), final("Feed it daily."))}
    _, plain = stream_response(alice, **request)
    assert of_type(plain, "web_search_call")[0].action.sources is None
    _, sourced = stream_response(alice, include=["web_search_call.action.sources"], **request)
    sources = of_type(sourced, "web_search_call")[0].action.sources
    assert [source.url for source in sources] == ["https://docs.example.org/bread"]


def test_a_bad_browser_call_is_a_failed_search_and_the_model_reads_the_error(alice, search_index):
    _, response = stream_response(alice, tools=[{"type": "web_search"}], input=script(
        browser_call("teleport", {"to": "mars"}), final("{tool_output}")))
    [call] = of_type(response, "web_search_call")
    assert call.status == "failed"
    assert response.output_text == "Error: Unknown function `browser.teleport`: use `search`, `open` or `find`."


# --- a worker lost during a call -----------------------------------------------------------------


@pytest.mark.parametrize("tool, call, running", [
    ("code_interpreter", python_call("import time\ntime.sleep(5)"), "response.code_interpreter_call.interpreting"),
    ("mcp", mcp_call("demo", "slow", {"seconds": 5}), "response.mcp_call_arguments.done"),
])
def test_a_call_running_when_its_worker_is_killed_ends_interrupted_and_the_model_goes_on(
        alice, stack: LiveStack, mcp_url, tool, call, running):
    from responses_app.worker.tools.base import INTERRUPTED

    tools = [CODE_INTERPRETER] if tool == "code_interpreter" else [mcp_tool(mcp_url)]
    stream = alice.responses.create(model="echo", tools=tools, include=OUTPUTS, background=True, stream=True,
                                    input=script(call, final("after: {tool_output}")))
    events: list[dict[str, Any]] = []
    for event in stream:
        events.append(event.to_dict())
        if event.type == running and len(events) > 1:
            # The call is running (the worker flushes its events before it runs the tool).
            stack.kill("worker")
            stack.start("worker")
    assert_dense(events)
    assert_no_duplicates(events)
    response = alice.responses.retrieve(events[0]["response"]["id"])
    [interrupted] = of_type(response, f"{tool}_call")
    assert interrupted.status == "failed"
    if tool == "code_interpreter":
        assert interrupted.outputs[0].logs == INTERRUPTED
        read = INTERRUPTED
    else:
        assert (interrupted.error.type, interrupted.error.message) == ("mcp_protocol_error", INTERRUPTED)
        read = f"Error: {INTERRUPTED}"  # as the model reads any failed MCP call
    # The model read that the call was interrupted, and answered.
    assert response.status == "completed" and response.output_text == f"after: {read}"
    assert [event["type"] for event in events].count(running) == 1
