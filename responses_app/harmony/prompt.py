"""Responses API request -> harmony conversation -> prompt token ids.

The conversation is: a system message (reasoning effort, date), a developer message
(instructions and function tools), then the history items in order. Harmony's renderer
does the rest, including dropping the chain of thought of finished turns
(``auto_drop_analysis``: analysis messages before the last ``final`` message go).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from openai_harmony import (
    Author,
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)

from responses_app.harmony import file_search, tool_search
from responses_app.harmony.client_tools import (
    BY_CALL_TYPE,
    BY_OUTPUT_TYPE,
    CLIENT_TOOLS,
    answered_call_id,
    call_arguments,
    output_text,
)
from responses_app.harmony.encoding import get_encoding, markup_tokens
from responses_app.harmony.tool_search import is_deferred
from responses_app.wire.tool_types import WEB_SEARCH_TYPES

FUNCTIONS_NAMESPACE = "functions"
PYTHON_RECIPIENT = "python"
BROWSER_NAMESPACE = "browser"
# Harmony's stock python description says internet access is "UNKNOWN" and gives a fixed
# timeout; the model should know what the sandbox really allows.
PYTHON_DESCRIPTION = (
    "Use this tool to execute Python code in your chain of thought. The code will not be shown to the user. "
    "This tool should be used for internal reasoning, but not for code that is intended to be visible to the "
    "user (e.g. when creating plots, tables, or files).\n\n"
    "When you send a message containing Python code to python, it will be executed in a stateful Jupyter "
    "notebook environment. python will respond with the output of the execution or time out after {timeout:g} "
    "seconds. The drive at '/mnt/data' can be used to save and persist user files. Internet access for this "
    "session is disabled."
)
# The tools the model calls in harmony's "functions" namespace.
FUNCTION_TOOL_TYPES = ("function", "custom", *CLIENT_TOOLS)
# The tool search the model calls as a function of this name (harmony/tool_search.py).
SEARCH_TOOL = tool_search.TOOL_NAME
# Harmony prescribes this content type for function call arguments.
FUNCTION_CALL_CONTENT_TYPE = "<|constrain|>json"

# Every reasoning.effort the SDK names, as the three that gpt-oss was trained on.
HARMONY_EFFORT = {"none": ReasoningEffort.LOW, "minimal": ReasoningEffort.LOW, "low": ReasoningEffort.LOW,
                  "medium": ReasoningEffort.MEDIUM, "high": ReasoningEffort.HIGH, "xhigh": ReasoningEffort.HIGH,
                  "max": ReasoningEffort.HIGH}
# text.verbosity: gpt-oss has no such control, so the developer message asks for it.
VERBOSITY = {"low": "Keep your final answer brief: say only what is needed.",
             "high": "Give a thorough, detailed final answer."}
# Content part types whose text the model sees; the rest (images, audio) gpt-oss cannot read.
# An input_file part's "text" is the file's, read at create (files/inputs.py).
_TEXT_PART_KEYS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal",
                   "input_file": "text"}


class PromptError(ValueError):
    """The request cannot be expressed as a harmony conversation."""


@dataclass(frozen=True)
class PromptRequest:
    # OpenAI Responses item dicts, oldest first: the items of the whole
    # previous_response_id chain, then this response's input items.
    history: list[dict]
    instructions: str | None = None
    reasoning_effort: str | None = None  # a key of HARMONY_EFFORT; None = medium
    verbosity: str | None = None  # "low" | "medium" | "high"; None = medium
    tools: list[dict] = field(default_factory=list)  # OpenAI function tools
    tool_choice: str | dict = "auto"  # "none" => no tools are offered to the model
    conversation_date: str | None = None  # YYYY-MM-DD
    # mcp_list_tools items of the conversation (the latest per server_label wins): the tools
    # of each MCP server in ``tools``, offered as a harmony namespace named by its label.
    mcp_listings: list[dict] = field(default_factory=list)
    python_timeout_s: float = 120.0


def render_prompt(request: PromptRequest) -> list[int]:
    """Token ids of the whole prompt, ending with ``<|start|>assistant`` ready for completion."""
    conversation = Conversation.from_messages(build_messages(request))
    return get_encoding().render_conversation_for_completion(conversation, Role.ASSISTANT)


def build_messages(request: PromptRequest) -> list[Message]:
    """The harmony messages for ``request`` (exposed for inspection and tests)."""
    messages = [_system_message(request)]
    developer = _developer_message(request)
    if developer is not None:
        messages.append(developer)
    messages.extend(history_messages(request.history))
    return messages


def _system_message(request: PromptRequest) -> Message:
    effort_name = (request.reasoning_effort or "medium").lower()
    effort = HARMONY_EFFORT.get(effort_name)
    if effort is None:
        raise PromptError(f"Unsupported reasoning effort {request.reasoning_effort!r}.")
    content = SystemContent.new().with_reasoning_effort(effort)
    if request.conversation_date:
        content = content.with_conversation_start_date(request.conversation_date)
    for namespace in server_tool_namespaces(request):
        content = content.with_tools(namespace)
    return Message.from_role_and_content(Role.SYSTEM, content)


def server_tool_namespaces(request: PromptRequest) -> list[ToolNamespaceConfig]:
    """Harmony namespaces of the tools the worker runs: python, browser, file_search and each
    MCP server."""
    if request.tool_choice == "none":
        return []
    namespaces: list[ToolNamespaceConfig] = []
    types = {tool.get("type") for tool in request.tools}
    if types & WEB_SEARCH_TYPES:
        namespaces.append(ToolNamespaceConfig.browser())
    if "file_search" in types:
        namespaces.append(file_search.namespace_config())
    if "code_interpreter" in types:
        namespaces.append(ToolNamespaceConfig(name=PYTHON_RECIPIENT, tools=[],
                                              description=PYTHON_DESCRIPTION.format(timeout=request.python_timeout_s)))
    listings = {listing.get("server_label"): listing for listing in request.mcp_listings}
    for tool in request.tools:
        listing = listings.get(tool.get("server_label")) if tool.get("type") == "mcp" else None
        if listing is None or listing.get("error"):
            continue
        tools = [ToolDescription.new(entry["name"], entry.get("description") or "", entry.get("input_schema"))
                 for entry in listing.get("tools") or []]
        namespaces.append(ToolNamespaceConfig(name=tool["server_label"], tools=tools,
                                              description=tool.get("server_description") or ""))
    return namespaces


def _developer_message(request: PromptRequest) -> Message | None:
    tools = [_tool_description(tool) for tool in offered_function_tools(request.tools, request.tool_choice)]
    namespaces = offered_namespaces(request.tools, request.tool_choice)
    instructions = "\n\n".join(filter(None, [request.instructions, VERBOSITY.get(request.verbosity or "")]))
    if not instructions and not tools and not namespaces:
        return None
    content = DeveloperContent.new()
    if instructions:
        content = content.with_instructions(instructions)
    if tools:
        content = content.with_function_tools(tools)
    for namespace in namespaces:
        content = content.with_tools(ToolNamespaceConfig(
            name=namespace["name"], description=namespace["description"],
            tools=[_tool_description(tool) for tool in namespace["tools"]]))
    return Message.from_role_and_content(Role.DEVELOPER, content)


def offered_namespaces(tools: list[dict], tool_choice: str | dict) -> list[dict]:
    """The namespace tools the model is told about, each as a harmony namespace of its
    own beside ``functions`` (a call to one is ``to=<namespace>.<function>``)."""
    if tool_choice == "none" or (isinstance(tool_choice, dict) and tool_choice.get("type") in FUNCTION_TOOL_TYPES):
        return []
    return [loaded for tool in tools if tool.get("type") == "namespace" and (loaded := _loaded_namespace(tool))]


def _loaded_namespace(namespace: dict) -> dict | None:
    """A namespace as the prompt declares it: without the members it defers (tool search
    loads them), or None when nothing of it is loaded."""
    if is_deferred(namespace):
        return None
    members = [member for member in namespace["tools"] if not is_deferred(member)]
    return {**namespace, "tools": members} if members else None


def offered_function_tools(tools: list[dict], tool_choice: str | dict) -> list[dict]:
    """The function tools the model is told about.

    Harmony cannot force a call, so a forced choice only narrows what is offered:
    ``"none"`` offers nothing and ``{"type": "function", "name": X}`` offers only X.
    ``allowed_tools`` offers every tool, so that the prompt (and the engine's prefix cache)
    stays the same whatever is allowed: the worker refuses the calls it does not allow
    (harmony/allowed_calls.py). Non-function tools (built-in tools) are rendered elsewhere.
    """
    functions = [tool for tool in tools if tool.get("type", "function") in (*FUNCTION_TOOL_TYPES, SEARCH_TOOL)
                 and not is_deferred(tool)]
    if tool_choice == "none":
        return []
    if isinstance(tool_choice, dict):
        allowed = _allowed_function_names(tool_choice)
        if allowed is not None:
            return [tool for tool in functions if function_name(tool) in allowed]
    return functions


def function_name(tool: dict) -> str | None:
    """The name the model calls a tool of ``functions`` by: a client tool's (and tool
    search's) is its type."""
    return tool["type"] if tool.get("type") in (*CLIENT_TOOLS, SEARCH_TOOL) else tool.get("name")


def _allowed_function_names(tool_choice: dict) -> set[str | None] | None:
    choice_type = tool_choice.get("type")
    if choice_type in ("function", "custom"):
        return {tool_choice.get("name")}
    if choice_type in CLIENT_TOOLS:
        return {choice_type}
    return None


def _tool_description(tool: dict) -> ToolDescription:
    client_tool = CLIENT_TOOLS.get(tool.get("type") or "")
    if client_tool is not None:
        return ToolDescription.new(client_tool.tool_type, client_tool.description, client_tool.parameters)
    if tool.get("type") == SEARCH_TOOL:
        return ToolDescription.new(SEARCH_TOOL, tool.get("description") or tool_search.DEFAULT_DESCRIPTION,
                                   tool.get("parameters") or tool_search.DEFAULT_PARAMETERS)
    name = tool.get("name")
    if not name:
        raise PromptError("A function tool needs a name.")
    if tool.get("type") == "custom":
        return ToolDescription.new(name, _custom_tool_description(tool), None)
    return ToolDescription.new(name, tool.get("description") or "", tool.get("parameters"))


def _custom_tool_description(tool: dict) -> str:
    """A custom tool takes free text, not JSON: its description says so (and gives its
    grammar, which the engine also enforces on the call)."""
    tool_format = tool.get("format") or {}
    note = "Call it with plain text as its whole input, not JSON."
    if tool_format.get("type") == "grammar":
        note += f" The input must match this {tool_format['syntax']} grammar:\n{tool_format['definition']}"
    return "\n".join(filter(None, [tool.get("description"), note]))


# --- history items ---------------------------------------------------------------------


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
    text = _joined_texts(item.get("content"))
    if not text:
        text = _joined_texts(item.get("summary"))
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


def tool_call_message(recipient: str, arguments: str, channel: str, content_type: str) -> Message:
    return (Message.from_role_and_content(Role.ASSISTANT, arguments).with_channel(channel)
            .with_recipient(recipient).with_content_type(content_type))


def tool_output_message(tool: str, text: str, channel: str) -> Message:
    return Message.from_author_and_content(Author.new(Role.TOOL, tool), text).with_channel(channel).with_recipient(
        "assistant")


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
    tools = item.get("tools") or []
    return [tool_output_message(f"{FUNCTIONS_NAMESPACE}.{SEARCH_TOOL}", tool_search.output_text(tools), "commentary"),
            *loaded_tools_messages(tools)]


def loaded_tools_messages(tools: list[dict]) -> list[Message]:
    """A developer message that declares the tools a search loaded, or an additional_tools
    item added (none when there are none)."""
    functions = [_tool_description(tool) for tool in tools if tool.get("type") in ("function", "custom")]
    namespaces = [tool for tool in tools if tool.get("type") == "namespace"]
    if not functions and not namespaces:
        return []
    content = DeveloperContent.new()
    if functions:
        content = content.with_function_tools(functions)
    for namespace in namespaces:
        content = content.with_tools(ToolNamespaceConfig(
            name=namespace["name"], description=namespace.get("description") or "",
            tools=[_tool_description(member) for member in namespace["tools"]]))
    return [Message.from_role_and_content(Role.DEVELOPER, content)]


def _additional_tools(item: dict, approvals: dict[str, dict]) -> list[Message]:
    return loaded_tools_messages(item.get("tools") or [])


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


def content_text(content: object) -> str:
    """The text of a message's content: a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise PromptError(f"Unsupported message content {type(content).__name__}.")
    # Separate parts so that their words do not run together.
    return "\n".join(_part_text(part) for part in content)


def _part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        raise PromptError("Message content parts must be objects.")
    key = _TEXT_PART_KEYS.get(str(part.get("type")))
    if key is None:
        raise PromptError(f"Unsupported content part type {part.get('type')!r}; this model reads text only.")
    return str(part.get(key) or "")


def _joined_texts(parts: object) -> str:
    if not isinstance(parts, list):
        return ""
    texts = [str(part.get("text") or "") for part in parts if isinstance(part, dict)]
    return "\n".join(text for text in texts if text)


# --- the tool loop's continuations -------------------------------------------------------------


def tool_result_tokens(author: str, text: str, channel: str, loaded: tuple[dict, ...] = ()) -> list[int]:
    """A tool's message to the assistant (and the declaration of the tools a search
    loaded), then the header of the assistant's next message: what the tool loop appends
    to the prompt after the model's call."""
    encoding = get_encoding()
    messages = [tool_output_message(author, text, channel), *loaded_tools_messages(list(loaded))]
    return [token for message in messages for token in encoding.render(message)] + list(
        markup_tokens("<|start|>assistant"))


def reopened_item_prefix(item: dict) -> list[int]:
    """The start of the assistant message that wrote ``item``, up to what its events gave
    so far: a continued response (worker/continuation.py) prefills it, and the model goes
    on from there. A web search's arguments are not kept: the model writes its call again
    after the namespace."""
    kind = item["type"]
    if kind == "reasoning":
        header, text = "<|channel|>analysis<|message|>", _joined_texts(item.get("content"))
    elif kind == "message":
        channel = "commentary" if item.get("phase") == "commentary" else "final"
        header, text = f"<|channel|>{channel}<|message|>", _joined_texts(item.get("content"))
    elif kind == "function_call":
        recipient = f"{item.get('namespace') or FUNCTIONS_NAMESPACE}.{item['name']}"
        header = f"<|channel|>commentary to={recipient} {FUNCTION_CALL_CONTENT_TYPE}<|message|>"
        text = item["arguments"]
    elif kind == "custom_tool_call":
        header, text = f"<|channel|>commentary to={FUNCTIONS_NAMESPACE}.{item['name']}<|message|>", item["input"]
    elif kind == "code_interpreter_call":
        header, text = f"<|channel|>analysis to={PYTHON_RECIPIENT} code<|message|>", item.get("code") or ""
    elif kind == "mcp_call":
        recipient = f"{item['server_label']}.{item['name']}"
        header, text = (f"<|channel|>commentary to={recipient} {FUNCTION_CALL_CONTENT_TYPE}<|message|>",
                        item.get("arguments") or "")
    elif kind == "web_search_call":
        header, text = f"<|channel|>analysis to={BROWSER_NAMESPACE}.", ""
    elif kind == "file_search_call":  # its queries are known once it ran: the model writes them again
        # As the call is rendered (the recipient in the role's part), so that it counts the same.
        header, text = f" to={file_search.RECIPIENT}<|channel|>analysis {FUNCTION_CALL_CONTENT_TYPE}<|message|>", ""
    else:
        raise ValueError(f"a {kind} item is not written by the model")
    encoding = get_encoding()
    # The text is the model's, as text: a "<|end|>" in it is not the special token.
    return encoding.encode(header, allowed_special="all") + encoding.encode(text, disallowed_special=())


# "<|start|>assistant": a turn's first message begins with the prompt's.
TURN_START_TOKENS = 2


def assistant_tokens(items: list[dict], continued: bool = False) -> tuple[int, int, int]:
    """(output, reasoning, open) tokens of the messages the assistant wrote for ``items`` (a
    response's output so far), as the prompt renders them: what a continued response
    counts as generated before it. ``continued``: the assistant writes on after them (the
    start of its next message is its own when it follows one of its messages: those
    ``open`` tokens are counted as output, and are reasoning too if that message is)."""
    encoding = get_encoding()
    output = reasoning = 0
    turn_started = True  # the first message's "<|start|>assistant" is the prompt's, as after a tool's
    for message in history_messages([item for item in items if item.get("type") != "compaction"]):
        if message.author.role != Role.ASSISTANT:
            turn_started = True
            continue
        tokens = len(encoding.render(message)) - (TURN_START_TOKENS if turn_started else 0)
        turn_started = False
        output += tokens
        reasoning += tokens if message.channel == "analysis" else 0
    opened = TURN_START_TOKENS if continued and not turn_started else 0
    output += opened
    for item in items:
        summary = _joined_texts(item.get("summary")) if item.get("type") == "reasoning" else ""
        if summary:  # its own engine call's answer: "<|channel|>final<|message|>", the text, "<|return|>"
            output += len(encoding.encode(summary, disallowed_special=())) + 3 + (item.get("status") != "in_progress")
    return output, reasoning, opened


def forced_call_prefix(tool_choice: str | dict, tools: list[dict]) -> list[int]:
    """The start of the assistant message that a forcing ``tool_choice`` prefills: harmony
    has no switch for it, so the header of the call is written for the model. ``required``
    with several tools leaves the recipient to the model. Empty when nothing is forced."""
    text = _forced_header(tool_choice, tools)
    return get_encoding().encode(text, allowed_special="all") if text else []


# What the model reads when it leaves a forced call's recipient empty (it answered where a
# call is required); the call is then forced again.
MISSING_RECIPIENT = ("Error: this turn must call a tool, and the message named none. Call one of the tools you "
                     "were given.")


def open_recipient(prefill: list[int]) -> str | None:
    """Where a prefilled call header leaves its recipient for the model to write: what it
    holds of it ("" after ``to=``, ``crm.`` for a namespace); None when the prefill is no
    such header (none, a whole call's, or the start of another message)."""
    text = get_encoding().decode(prefill) if prefill else ""
    _, trigger, written = text.partition(" to=")
    return written if trigger and "<|message|>" not in text else None


def _forced_header(tool_choice: str | dict, tools: list[dict]) -> str | None:
    if isinstance(tool_choice, dict) and tool_choice.get("type") == "allowed_tools":
        if tool_choice["mode"] != "required":
            return None
        tools = tool_choice["tools"]
        tool_choice = "required"
    if tool_choice == "required":
        if len(tools) != 1:
            return "<|channel|>commentary to="
        tool = tools[0]
        tool_choice = {"type": tool["type"], "name": tool.get("name"), "server_label": tool.get("server_label")}
    if not isinstance(tool_choice, dict):
        return None
    kind = tool_choice.get("type")
    if kind == "namespace":
        return f"<|channel|>commentary to={tool_choice['name']}."
    if kind == "custom":
        return f"<|channel|>commentary to={FUNCTIONS_NAMESPACE}.{tool_choice['name']}<|message|>"
    if kind in ("function", *CLIENT_TOOLS):
        recipient = f"{FUNCTIONS_NAMESPACE}.{function_name(tool_choice)}"
        return f"<|channel|>commentary to={recipient} {FUNCTION_CALL_CONTENT_TYPE}<|message|>"
    if kind == "mcp":
        if tool_choice.get("name"):
            return (f"<|channel|>commentary to={tool_choice['server_label']}.{tool_choice['name']} "
                    f"{FUNCTION_CALL_CONTENT_TYPE}<|message|>")
        return f"<|channel|>commentary to={tool_choice['server_label']}."
    if kind == "code_interpreter":
        return f"<|channel|>analysis to={PYTHON_RECIPIENT} code<|message|>"
    if kind in WEB_SEARCH_TYPES:
        return f"<|channel|>analysis to={BROWSER_NAMESPACE}.search code<|message|>"
    if kind == "file_search":
        return f"<|channel|>analysis to={file_search.RECIPIENT} {FUNCTION_CALL_CONTENT_TYPE}<|message|>"
    return None


# The user message of a reasoning summary (reasoning.summary): the served model writes the
# summary of its own reasoning, which follows it; the echo engine answers with the
# reasoning's first sentence.
REASONING_SUMMARY_REQUEST = "Summarize the reasoning below for the person who asked."
# reasoning.summary: how long the summary may be, and what the model is asked for.
SUMMARY_STYLES = {"concise": ("in one or two sentences", 96), "auto": ("in a few sentences", 192),
                  "detailed": ("in a detailed paragraph", 384)}


def summary_prompt(reasoning: str, style: str) -> tuple[list[int], int]:
    """The prompt that asks the served model for a summary of ``reasoning`` (its own, from
    the response being written), and the summary's token cap."""
    length, max_tokens = SUMMARY_STYLES.get(style, SUMMARY_STYLES["auto"])
    ask = (f"{REASONING_SUMMARY_REQUEST} Write it {length}, in the first person, saying what you considered and "
           "concluded. Answer with the summary only.")
    return render_prompt(PromptRequest(history=[{"type": "message", "role": "user",
                                                  "content": f"{ask}\n\n{reasoning}"}],
                                       reasoning_effort="low")), max_tokens

