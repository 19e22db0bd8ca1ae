"""Responses API request -> harmony conversation -> prompt token ids.

The conversation is: a system message (reasoning effort, date), a developer message
(instructions and function tools), then the history items in order. Harmony's renderer
does the rest, including dropping the chain of thought of finished turns
(``auto_drop_analysis``: analysis messages before the last ``final`` message go).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from openai_harmony import (
    Conversation,
    DeveloperContent,
    Message,
    ReasoningEffort,
    Role,
    SystemContent,
    ToolDescription,
    ToolNamespaceConfig,
)

from responses_app.harmony import file_search
from responses_app.harmony.encoding import get_encoding
from responses_app.harmony.history import history_messages
from responses_app.harmony.messages import (
    FUNCTION_TOOL_TYPES,
    PYTHON_RECIPIENT,
    PromptError,
    namespace_config,
    tool_description,
)
from responses_app.wire.tool_types import (
    WEB_SEARCH_TYPES,
    ClientSideTool,
    CustomTool,
    FunctionTool,
    McpTool,
    NamespaceTool,
    Tool,
    ToolSearchTool,
    function_name,
    is_deferred,
)

if TYPE_CHECKING:  # harmony runs without Django: models/__init__ is not imported at run time
    from responses_app.models.response_params import ToolChoice

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
# Every reasoning.effort the SDK names, as the three that gpt-oss was trained on.
HARMONY_EFFORT = {"none": ReasoningEffort.LOW, "minimal": ReasoningEffort.LOW, "low": ReasoningEffort.LOW,
                  "medium": ReasoningEffort.MEDIUM, "high": ReasoningEffort.HIGH, "xhigh": ReasoningEffort.HIGH,
                  "max": ReasoningEffort.HIGH}
# text.verbosity: gpt-oss has no such control, so the developer message asks for it.
VERBOSITY = {"low": "Keep your final answer brief: say only what is needed.",
             "high": "Give a thorough, detailed final answer."}
# Content part types whose text the model sees; the rest (images, audio) gpt-oss cannot read.


@dataclass(frozen=True)
class PromptRequest:
    # OpenAI Responses item dicts, oldest first: the items of the whole
    # previous_response_id chain, then this response's input items.
    history: list[dict]
    instructions: str | None = None
    reasoning_effort: str | None = None  # a key of HARMONY_EFFORT; None = medium
    verbosity: str | None = None  # "low" | "medium" | "high"; None = medium
    tools: Sequence[Tool] = ()
    tool_choice: ToolChoice | None = None  # None: auto; mode "none": no tools are offered to the model
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
    if request.tool_choice is not None and request.tool_choice.mode == "none":
        return []
    namespaces: list[ToolNamespaceConfig] = []
    types = {tool.type for tool in request.tools}
    if types & WEB_SEARCH_TYPES:
        namespaces.append(ToolNamespaceConfig.browser())
    if "file_search" in types:
        namespaces.append(file_search.namespace_config())
    if "code_interpreter" in types:
        namespaces.append(ToolNamespaceConfig(name=PYTHON_RECIPIENT, tools=[],
                                              description=PYTHON_DESCRIPTION.format(timeout=request.python_timeout_s)))
    listings = {listing.get("server_label"): listing for listing in request.mcp_listings}
    for tool in request.tools:
        if not isinstance(tool, McpTool):
            continue
        listing = listings.get(tool.server_label)
        if listing is None or listing.get("error"):
            continue
        tools = [ToolDescription.new(entry["name"], entry.get("description") or "", entry.get("input_schema"))
                 for entry in listing.get("tools") or []]
        namespaces.append(ToolNamespaceConfig(name=tool.server_label, tools=tools,
                                              description=tool.server_description or ""))
    return namespaces


def _developer_message(request: PromptRequest) -> Message | None:
    tools = [tool_description(tool) for tool in offered_function_tools(request.tools, request.tool_choice)]
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
        content = content.with_tools(namespace_config(namespace))
    return Message.from_role_and_content(Role.DEVELOPER, content)


def offered_namespaces(tools: Sequence[Tool], tool_choice: ToolChoice | None) -> list[NamespaceTool]:
    """The namespace tools the model is told about, each as a harmony namespace of its
    own beside ``functions`` (a call to one is ``to=<namespace>.<function>``)."""
    if tool_choice is not None and (tool_choice.mode == "none" or (
            tool_choice.named is not None and tool_choice.named.type in FUNCTION_TOOL_TYPES)):
        return []
    return [loaded for tool in tools if isinstance(tool, NamespaceTool) and (loaded := _loaded_namespace(tool))]


def _loaded_namespace(namespace: NamespaceTool) -> NamespaceTool | None:
    """A namespace as the prompt declares it: without the members it defers (tool search
    loads them), or None when nothing of it is loaded."""
    if namespace.defer_loading:
        return None
    members = tuple(member for member in namespace.tools if not member.defer_loading)
    return replace(namespace, tools=members) if members else None


def offered_function_tools(tools: Sequence[Tool], tool_choice: ToolChoice | None
                           ) -> list[FunctionTool | CustomTool | ClientSideTool | ToolSearchTool]:
    """The function tools the model is told about.

    Harmony cannot force a call, so a forced choice only narrows what is offered:
    ``"none"`` offers nothing and ``{"type": "function", "name": X}`` offers only X.
    ``allowed_tools`` offers every tool, so that the prompt (and the engine's prefix cache)
    stays the same whatever is allowed: the worker refuses the calls it does not allow
    (harmony/allowed_calls.py). Non-function tools (built-in tools) are rendered elsewhere.
    """
    functions = [tool for tool in tools if isinstance(tool, (FunctionTool, CustomTool, ClientSideTool, ToolSearchTool))
                 and not is_deferred(tool)]
    if tool_choice is None:
        return functions
    if tool_choice.mode == "none":
        return []
    if tool_choice.named is not None and tool_choice.named.function_name is not None:
        return [tool for tool in functions if function_name(tool) == tool_choice.named.function_name]
    return functions


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
