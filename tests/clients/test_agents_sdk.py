"""The OpenAI Agents SDK (Python) against the live stack: an agent with a function tool,
run to its final output by the SDK's Runner over HTTP and over the Responses WebSocket,
an agent with the SDK's shell and apply_patch tools, and an agent with its hosted
FileSearchTool on a vector store, with only the base URL, key and model set."""

from __future__ import annotations

import json

import pytest
from agents import (
    Agent,
    ApplyPatchTool,
    FileSearchTool,
    OpenAIResponsesModel,
    OpenAIResponsesWSModel,
    Runner,
    ShellTool,
    function_tool,
    set_tracing_disabled,
)
from agents.editor import ApplyPatchOperation, ApplyPatchResult
from agents.tool import ShellCallOutcome, ShellCommandOutput, ShellCommandRequest, ShellResult
from openai import AsyncOpenAI

from tests.clients.handbook import ANSWER, QUERY, SEARCH_THEN_CITE, handbook
from tests.helpers import function_call_then_answer

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


class Workspace:
    """The agent's editor (the SDK's ApplyPatchEditor) and shell, over a dict of files."""

    def __init__(self) -> None:
        self.files: dict[str, str] = {}
        self.commands: list[str] = []

    def create_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        self.files[operation.path] = "".join(line[1:] + "\n" for line in (operation.diff or "").splitlines())
        return ApplyPatchResult(status="completed", output=f"Created {operation.path}")

    def update_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        return ApplyPatchResult(status="failed", output="not supported")

    def delete_file(self, operation: ApplyPatchOperation) -> ApplyPatchResult:
        return ApplyPatchResult(status="failed", output="not supported")

    def shell(self, request: ShellCommandRequest) -> ShellResult:
        self.commands.extend(request.data.action.commands)
        return ShellResult(output=[ShellCommandOutput(stdout=self.files.get(command.split()[-1], ""),
                                                      outcome=ShellCallOutcome(type="exit", exit_code=0))
                                   for command in request.data.action.commands])


def call(tool: str, arguments: dict) -> str:
    return (f"<|start|>assistant<|channel|>commentary to=functions.{tool} <|constrain|>json"
            f"<|message|>{json.dumps(arguments)}<|call|>")


def test_an_agent_writes_a_file_with_apply_patch_and_reads_it_with_shell(stack, client_key):
    client = AsyncOpenAI(base_url=stack.base_url, api_key=client_key, max_retries=0)
    workspace = Workspace()
    agent = Agent(name="Coder", instructions="Edit files as asked.",
                  model=OpenAIResponsesModel(model="echo", openai_client=client),
                  tools=[ApplyPatchTool(editor=workspace), ShellTool(executor=workspace.shell)])
    script = ("<|channel|>analysis<|message|>Write, then check.<|end|>"
              + call("apply_patch", {"type": "create_file", "path": "hello.txt", "diff": "+Hello\n+World"})
              + call("shell", {"commands": ["cat hello.txt"]})
              + "<|start|>assistant<|channel|>final<|message|>The file says: {tool_output}<|return|>")

    result = Runner.run_sync(agent, script)

    assert workspace.files == {"hello.txt": "Hello\nWorld\n"} and workspace.commands == ["cat hello.txt"]
    # What the model read back is the shell output the SDK sent, as the server renders it.
    assert json.loads(result.final_output.removeprefix("The file says: ")) == [
        {"stdout": "Hello\nWorld\n", "stderr": "", "exit_code": 0}]
    kinds = [item.raw_item.get("type") if isinstance(item.raw_item, dict) else item.raw_item.type
             for item in result.new_items]
    assert kinds == ["reasoning", "apply_patch_call", "apply_patch_call_output", "shell_call", "shell_call_output",
                     "message"]


@pytest.mark.parametrize("transport", [OpenAIResponsesModel, OpenAIResponsesWSModel], ids=["http", "websocket"])
def test_an_agent_searches_a_vector_store_with_the_file_search_tool_and_cites_the_file(stack, client_key, transport):
    store_id, ids = handbook(stack, client_key)
    client = AsyncOpenAI(base_url=stack.base_url, api_key=client_key, max_retries=0)
    agent = Agent(name="Handbook", instructions="Answer from the handbook.",
                  model=transport(model="echo", openai_client=client),
                  tools=[FileSearchTool(vector_store_ids=[store_id], include_search_results=True)])

    result = Runner.run_sync(agent, SEARCH_THEN_CITE)

    # The server searched (the SDK runs nothing for a hosted tool): one turn, its call then the answer.
    assert len(result.raw_responses) == 1
    assert [item.type for item in result.new_items] == ["reasoning_item", "tool_call_item", "message_output_item"]
    search = result.new_items[1].raw_item
    assert (search.type, search.status, search.queries) == ("file_search_call", "completed", [QUERY])
    # Its results, shown because the tool's include_search_results asked for them.
    # (Hybrid search ranks every chunk by meaning too: the other file follows, lower.)
    assert [found.filename for found in search.results] == ["leave.md", "expenses.md"]
    assert search.results[0].file_id == ids["leave.md"] and "27 days of paid annual leave" in search.results[0].text

    assert result.final_output == ANSWER
    [citation] = result.new_items[2].raw_item.content[0].annotations
    assert (citation.type, citation.file_id, citation.filename, citation.index) == (
        "file_citation", ids["leave.md"], "leave.md", ANSWER.index("【"))
