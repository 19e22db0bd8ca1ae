"""Responses items (a conversation's history, oldest first) as harmony messages."""

from __future__ import annotations

import json
from collections.abc import Callable

from openai_harmony import Author, DeveloperContent, Message, Role

from responses_app.harmony import file_search, tool_search
from responses_app.harmony.client_tools import (
    BY_CALL_TYPE,
    BY_OUTPUT_TYPE,
    answered_call_id,
    call_arguments,
    output_text,
)
from responses_app.harmony.messages import (
    FUNCTION_CALL_CONTENT_TYPE,
    FUNCTIONS_NAMESPACE,
    PYTHON_RECIPIENT,
    SEARCH_TOOL,
    PromptError,
    content_text,
    joined_texts,
    loaded_tools_messages,
    tool_call_message,
    tool_output_message,
)
from responses_app.wire.tool_types import loaded_tools_from_stored


def history_messages(history: list[dict]) -> list[Message]:
    """Map Responses items to harmony messages, in order."""
    # call_id -> function name, for the outputs that follow; approval request id -> the request.
    call_names: dict[str, str] = {}
    approvals: dict[str, dict] = {}
    messages: list[Message] = []
    for index, item in enumerate(history):
        item_type = _item_type(item)
        if item_type in ("function_call", "custom_tool_call"):
            call_names[str(item.get("call_id"))] = _function_recipient(item, index)
        if item_type in BY_CALL_TYPE:
            call_names[str(item.get("call_id"))] = f"{FUNCTIONS_NAMESPACE}.{BY_CALL_TYPE[item_type].tool_type}"
        if item_type == "mcp_approval_request":
            approvals[str(item.get("id"))] = item
        if item_type in TOOL_ITEM_RENDERERS:
            messages.extend(TOOL_ITEM_RENDERERS[item_type](item, approvals))
            continue
        renderer = ITEM_RENDERERS.get(item_type)
        if renderer is None:
            raise PromptError(f"Input item {index} has unsupported type {item_type!r}.")
        message = renderer(item, call_names)
        if message is not None:
            messages.append(message)
    return messages


def _item_type(item: dict) -> str:
    # Easy-input messages ({"role": ..., "content": ...}) may omit the type.
    if "type" not in item and "role" in item:
        return "message"
    return str(item.get("type"))


def _message(item: dict, call_names: dict[str, str]) -> Message:
    role = item.get("role")
    text = content_text(item.get("content"))
    if role == "user":
        return Message.from_role_and_content(Role.USER, text)
    if role in ("system", "developer"):
        # Harmony has no mid-conversation system message; the developer role carries it in place.
        return Message.from_role_and_content(Role.DEVELOPER, DeveloperContent.new().with_instructions(text))
    if role == "assistant":
        # phase "commentary": a preamble the model wrote between its calls (the SDK's label).
        channel = "commentary" if item.get("phase") == "commentary" else "final"
        return Message.from_role_and_content(Role.ASSISTANT, text).with_channel(channel)
    raise PromptError(f"Unsupported message role {role!r}.")


def _reasoning(item: dict, call_names: dict[str, str]) -> Message | None:
    text = joined_texts(item.get("content"))
    if not text:
        text = joined_texts(item.get("summary"))
    if not text:
        return None  # e.g. encrypted-only reasoning: nothing the model can read
    return Message.from_role_and_content(Role.ASSISTANT, text).with_channel("analysis")


def _function_call(item: dict, call_names: dict[str, str]) -> Message:
    name = call_names[str(item.get("call_id"))]
    arguments = item.get("arguments")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments if arguments is not None else {})
    return (
        Message.from_role_and_content(Role.ASSISTANT, arguments)
        .with_channel("commentary")
        .with_recipient(name)
        .with_content_type(FUNCTION_CALL_CONTENT_TYPE)
    )


def _function_call_output(item: dict, call_names: dict[str, str]) -> Message:
    call_id = str(item.get("call_id"))
    name = call_names.get(call_id)
    if name is None:
        raise PromptError(f"No function_call with call_id {call_id!r} precedes its function_call_output.")
    author = Author.new(Role.TOOL, name)
    return (
        Message.from_author_and_content(author, _output_text(item.get("output")))
        .with_channel("commentary")
        .with_recipient("assistant")
    )


def _function_recipient(item: dict, index: int) -> str:
    """``functions.<name>``, or ``<namespace>.<name>`` for a function of a namespace tool."""
    name = item.get("name")
    if not name or not item.get("call_id"):
        raise PromptError(f"Input item {index} (function_call) needs a call_id and a name.")
    return f"{item.get('namespace') or FUNCTIONS_NAMESPACE}.{name}"


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return content_text(output)
    return json.dumps(output)


ItemRenderer = Callable[[dict, dict[str, str]], Message | None]
def _custom_tool_call(item: dict, call_names: dict[str, str]) -> Message:
    """A custom tool's call: its input as written, free text rather than JSON."""
    return (Message.from_role_and_content(Role.ASSISTANT, str(item.get("input") or ""))
            .with_channel("commentary").with_recipient(call_names[str(item.get("call_id"))]))


def _client_tool_call(item: dict, call_names: dict[str, str]) -> Message:
    """A shell, local_shell or apply_patch call: the function call the model wrote for it."""
    return _function_call({**item, "arguments": call_arguments(item)}, call_names)


def _client_tool_output(item: dict, call_names: dict[str, str]) -> Message:
    return _function_call_output({"call_id": answered_call_id(item), "output": output_text(item)}, call_names)


ITEM_RENDERERS: dict[str, ItemRenderer] = {
    "message": _message,
    "reasoning": _reasoning,
    "function_call": _function_call,
    "function_call_output": _function_call_output,
    "custom_tool_call": _custom_tool_call,
    "custom_tool_call_output": _function_call_output,
    **{call_type: _client_tool_call for call_type in BY_CALL_TYPE},
    **{output_type: _client_tool_output for output_type in BY_OUTPUT_TYPE},
}


# --- server-side tool items ------------------------------------------------------------------


def python_output_text(item: dict) -> str:
    """What the model reads back from a code_interpreter_call."""
    return "".join(str(output.get("logs", "")) for output in item.get("outputs") or [] if output.get("type") == "logs")


def _code_interpreter_call(item: dict, approvals: dict[str, dict]) -> list[Message]:
    return [tool_call_message(PYTHON_RECIPIENT, item.get("code") or "", "analysis", "code"),
            tool_output_message(PYTHON_RECIPIENT, python_output_text(item), "analysis")]


def _file_search_call(item: dict, approvals: dict[str, dict]) -> list[Message]:
    output = (file_search.results_text(item.get("results")) if item.get("status") == "completed"
              else "Error: the search did not run.")
    return [tool_call_message(file_search.RECIPIENT, file_search.call_arguments(item.get("queries") or []),
                              "analysis", "json"),
            tool_output_message(file_search.RECIPIENT, output, "analysis")]


def mcp_output_text(item: dict) -> str:
    if item.get("output") is not None:
        return str(item["output"])
    error = item.get("error") or {}
    if not isinstance(error, dict):
        return f"Error: {error}"
    if error.get("type") == "mcp_tool_execution_error":
        return "Error: " + content_text(error.get("content") or [])
    return f"Error: {error.get('message') or 'the tool call failed'}"


def _mcp_call(item: dict, approvals: dict[str, dict]) -> list[Message]:
    recipient = f"{item.get('server_label')}.{item.get('name')}"
    output = tool_output_message(recipient, mcp_output_text(item), "commentary")
    if item.get("approval_request_id") in approvals:
        return [output]  # the approval request already stands for the call
    return [tool_call_message(recipient, item.get("arguments") or "{}", "commentary", FUNCTION_CALL_CONTENT_TYPE),
            output]


def _mcp_approval_request(item: dict, approvals: dict[str, dict]) -> list[Message]:
    recipient = f"{item.get('server_label')}.{item.get('name')}"
    return [tool_call_message(recipient, item.get("arguments") or "{}", "commentary", FUNCTION_CALL_CONTENT_TYPE)]


DENIED_TEXT = "The user declined to run this tool call."


def _mcp_approval_response(item: dict, approvals: dict[str, dict]) -> list[Message]:
    request = approvals.get(str(item.get("approval_request_id")))
    if request is None:
        raise PromptError(f"No mcp_approval_request with id {item.get('approval_request_id')!r} precedes its "
                          "mcp_approval_response.")
    if item.get("approve"):
        return []  # the worker runs the call; its mcp_call item carries the output
    reason = f" Reason: {item['reason']}" if item.get("reason") else ""
    return [tool_output_message(f"{request.get('server_label')}.{request.get('name')}", DENIED_TEXT + reason,
                                "commentary")]


def _no_message(item: dict, approvals: dict[str, dict]) -> list[Message]:
    # mcp_list_tools becomes a namespace of the system message; a web search's pages are not
    # stored, and its call, like all analysis before a final answer, is dropped by harmony.
    return []


def _tool_search_call(item: dict, approvals: dict[str, dict]) -> list[Message]:
    arguments = item.get("arguments")
    return [tool_call_message(f"{FUNCTIONS_NAMESPACE}.{SEARCH_TOOL}", json.dumps(arguments), "commentary",
                              FUNCTION_CALL_CONTENT_TYPE)]


def _tool_search_output(item: dict, approvals: dict[str, dict]) -> list[Message]:
    """The search's answer, then the tools it loaded, declared to the model from here on."""
    tools = loaded_tools_from_stored(item.get("tools"))
    return [tool_output_message(f"{FUNCTIONS_NAMESPACE}.{SEARCH_TOOL}", tool_search.output_text(tools), "commentary"),
            *loaded_tools_messages(tools)]


def _additional_tools(item: dict, approvals: dict[str, dict]) -> list[Message]:
    return loaded_tools_messages(loaded_tools_from_stored(item.get("tools")))


ToolItemRenderer = Callable[[dict, dict[str, dict]], list[Message]]
TOOL_ITEM_RENDERERS: dict[str, ToolItemRenderer] = {
    "tool_search_call": _tool_search_call,
    "tool_search_output": _tool_search_output,
    "additional_tools": _additional_tools,
    "code_interpreter_call": _code_interpreter_call,
    "mcp_call": _mcp_call,
    "mcp_approval_request": _mcp_approval_request,
    "mcp_approval_response": _mcp_approval_response,
    "mcp_list_tools": _no_message,
    "web_search_call": _no_message,
    "file_search_call": _file_search_call,
}
