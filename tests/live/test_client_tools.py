"""The client-executed tools that the API types as items of their own (shell, local_shell,
apply_patch), through the openai SDK against the live stack: the model's call becomes
the typed item, the client's output goes back to the model, and a call the model wrote
unreadably is answered by the server, never sent to the client."""

from __future__ import annotations

import json

import openai
import pytest
from openai.types.responses import ResponseApplyPatchToolCall, ResponseFunctionShellToolCall

from tests.helpers import assert_dense, events_of

pytestmark = pytest.mark.core

SAW_OUTPUT = "<|start|>assistant<|channel|>final<|message|>Saw: {tool_output}<|return|>"


def call(tool: str, arguments: dict | str) -> str:
    """An echo script segment: the model calls ``tool`` as harmony writes a function call."""
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return f"<|channel|>commentary to=functions.{tool} <|constrain|>json<|message|>{text}<|call|>"


def test_a_shell_call_streams_its_commands_and_its_output_goes_back_to_the_model(alice):
    script = call("shell", {"commands": ["ls -la", "git status"], "timeout_ms": 5000}) + SAW_OUTPUT
    events = events_of(alice.responses.create(model="echo", input=script, tools=[{"type": "shell"}],
                                              stream=True))
    assert_dense(events)
    first = alice.responses.retrieve(events[0]["response"]["id"])
    [item] = first.output
    assert isinstance(item, ResponseFunctionShellToolCall) and item.status == "completed"
    assert item.action.commands == ["ls -la", "git status"] and item.action.timeout_ms == 5000
    assert first.status == "completed" and first.tools[0].type == "shell"
    kinds = [e["type"] for e in events if e.get("output_index") == 0]
    assert kinds == ["response.output_item.added", *["response.shell_call_command.added",
                     "response.shell_call_command.delta", "response.shell_call_command.done"] * 2,
                     "response.output_item.done"]
    assert [e["command"] for e in events if e["type"] == "response.shell_call_command.done"] == item.action.commands
    assert events[-1]["response"]["output"][0] == first.output[0].to_dict()

    second = alice.responses.create(model="echo", previous_response_id=first.id, tools=[{"type": "shell"}], input=[
        {"type": "shell_call_output", "call_id": item.call_id, "output": [
            {"stdout": "README.md\n", "stderr": "", "outcome": {"type": "exit", "exit_code": 0}},
            {"stdout": "", "stderr": "not a repo", "outcome": {"type": "exit", "exit_code": 128}}]}])
    assert second.status == "completed"
    seen = json.loads(second.output_text.removeprefix("Saw: "))
    assert seen == [{"stdout": "README.md\n", "stderr": "", "exit_code": 0},
                    {"stdout": "", "stderr": "not a repo", "exit_code": 128}]
    stored = alice.responses.input_items.list(second.id).data
    assert stored[0].type == "shell_call_output" and stored[0].output[1].outcome.exit_code == 128


def test_an_apply_patch_call_round_trips_without_storage(alice):
    diff = "@@\n-old\n+new\n"
    script = call("apply_patch", {"type": "update_file", "path": "a.txt", "diff": diff}) + SAW_OUTPUT
    tools = [{"type": "apply_patch"}]
    first = alice.responses.create(model="echo", input=script, tools=tools, store=False)
    [item] = first.output
    assert isinstance(item, ResponseApplyPatchToolCall)
    assert (item.operation.type, item.operation.path, item.operation.diff) == ("update_file", "a.txt", diff)

    second = alice.responses.create(model="echo", tools=tools, store=False, input=[
        {"role": "user", "content": script}, item.to_dict(),
        {"type": "apply_patch_call_output", "call_id": item.call_id, "status": "failed", "output": "no a.txt"}])
    assert json.loads(second.output_text.removeprefix("Saw: ")) == {"status": "failed", "output": "no a.txt"}


def test_a_delete_file_operation_has_no_diff(alice):
    script = call("apply_patch", {"type": "delete_file", "path": "old.txt"})
    [item] = alice.responses.create(model="echo", input=script, tools=[{"type": "apply_patch"}]).output
    assert item.operation.to_dict() == {"type": "delete_file", "path": "old.txt"}


@pytest.mark.parametrize("names_the_call", ["id", "call_id"])
def test_a_local_shell_output_may_name_its_call_in_id_or_call_id(alice, names_the_call):
    script = call("local_shell", {"command": ["bash", "-lc", "pwd"], "working_directory": "/tmp"}) + SAW_OUTPUT
    tools = [{"type": "local_shell"}]
    first = alice.responses.create(model="echo", input=script, tools=tools)
    [item] = first.output
    assert item.type == "local_shell_call"
    assert (item.action.command, item.action.working_directory) == (["bash", "-lc", "pwd"], "/tmp")
    # The SDK types the call's id in ``id``; the Agents SDK sends ``call_id``.
    output = {"type": "local_shell_call_output", names_the_call: item.call_id, "output": '{"stdout": "/tmp"}'}
    second = alice.responses.create(model="echo", previous_response_id=first.id, tools=tools, input=[output])
    assert second.output_text == 'Saw: {"stdout": "/tmp"}'


def test_a_call_the_model_wrote_unreadably_is_answered_by_the_server_and_written_again(alice):
    script = (call("shell", '{"commands": "ls') + "<|start|>assistant"
              + call("shell", {"commands": ["ls"]}))
    response = alice.responses.create(model="echo", input=script, tools=[{"type": "shell"}])
    # Only the readable call reaches the client; the model was told what was wrong.
    [item] = response.output
    assert item.type == "shell_call" and item.action.commands == ["ls"]
    assert response.usage.output_tokens > 0 and response.status == "completed"


def test_an_output_must_answer_a_call(alice):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", tools=[{"type": "shell"}], input=[
            {"type": "shell_call_output", "call_id": "call_none", "output": []}])
    assert raised.value.status_code == 400 and raised.value.body["param"] == "input[0].call_id"


@pytest.mark.parametrize(("tools", "extra", "param"), [
    ([{"type": "shell", "environment": {"type": "container_auto"}}], {}, "tools[0].environment.type"),
    ([{"type": "shell"}, {"type": "function", "name": "shell"}], {}, "tools[1].name"),
    ([{"type": "shell"}], {"tool_choice": {"type": "apply_patch"}}, "tool_choice.type"),
    ([{"type": "apply_patch", "unknown": 1}], {}, "tools[0].unknown"),
])
def test_what_this_server_cannot_run_is_a_400_naming_it(alice, tools, extra, param):
    with pytest.raises(openai.BadRequestError) as raised:
        alice.responses.create(model="echo", input="Hi", tools=tools, **extra)
    assert raised.value.body["param"] == param


def test_tool_choice_forces_the_shell_tool(alice):
    # The header is prefilled for the model (the echo engine continues after it).
    response = alice.responses.create(model="echo", input=call("shell", {"commands": ["date"]}),
                                      tools=[{"type": "shell"}, {"type": "apply_patch"}],
                                      tool_choice={"type": "shell"})
    assert response.tool_choice.type == "shell"
    [item] = response.output
    assert item.type == "shell_call" and item.action.commands == ["date"]
