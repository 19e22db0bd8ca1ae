"""Harmony's building blocks for a prompt: the recipients' names, a tool as harmony declares
it, a tool's call and its output as messages, and the text of a content part."""

from __future__ import annotations

from collections.abc import Sequence

from openai_harmony import Author, DeveloperContent, Message, Role, ToolDescription, ToolNamespaceConfig

from responses_app.harmony import tool_search
from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.wire.tool_types import (
    ClientSideTool,
    CustomTool,
    FunctionTool,
    LoadedTool,
    NamespaceTool,
    ToolSearchTool,
)

FUNCTIONS_NAMESPACE = "functions"
PYTHON_RECIPIENT = "python"
BROWSER_NAMESPACE = "browser"
# The tools the model calls in harmony's "functions" namespace.
FUNCTION_TOOL_TYPES = ("function", "custom", *CLIENT_TOOLS)
# The tool search the model calls as a function of this name (harmony/tool_search.py).
SEARCH_TOOL = tool_search.TOOL_NAME
# Harmony prescribes this content type for function call arguments.
FUNCTION_CALL_CONTENT_TYPE = "<|constrain|>json"
# Content part types whose text the model sees; the rest (images, audio) gpt-oss cannot read.
# An input_file part's "text" is the file's, read at create (files/inputs.py).
TEXT_PART_KEYS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal",
                   "input_file": "text"}


class PromptError(ValueError):
    """The request cannot be expressed as a harmony conversation."""


def tool_description(tool: FunctionTool | CustomTool | ClientSideTool | ToolSearchTool) -> ToolDescription:
    """A tool the model calls in ``functions``, as harmony declares it."""
    if isinstance(tool, ClientSideTool):
        client_tool = CLIENT_TOOLS[tool.type]
        return ToolDescription.new(client_tool.tool_type, client_tool.description, client_tool.parameters)
    if isinstance(tool, ToolSearchTool):
        return ToolDescription.new(SEARCH_TOOL, tool.description or tool_search.DEFAULT_DESCRIPTION,
                                   tool.parameters or tool_search.DEFAULT_PARAMETERS)
    if isinstance(tool, CustomTool):
        return ToolDescription.new(tool.name, custom_tool_description(tool), None)
    return ToolDescription.new(tool.name, tool.description or "", tool.parameters)


def custom_tool_description(tool: CustomTool) -> str:
    """A custom tool takes free text, not JSON: its description says so (and gives its
    grammar, which the engine also enforces on the call)."""
    note = "Call it with plain text as its whole input, not JSON."
    if tool.grammar is not None:
        note += f" The input must match this {tool.grammar.syntax} grammar:\n{tool.grammar.definition}"
    return "\n".join(filter(None, [tool.description, note]))


def tool_call_message(recipient: str, arguments: str, channel: str, content_type: str) -> Message:
    return (Message.from_role_and_content(Role.ASSISTANT, arguments).with_channel(channel)
            .with_recipient(recipient).with_content_type(content_type))


def tool_output_message(tool: str, text: str, channel: str) -> Message:
    return Message.from_author_and_content(Author.new(Role.TOOL, tool), text).with_channel(channel).with_recipient(
        "assistant")


def loaded_tools_messages(tools: Sequence[LoadedTool]) -> list[Message]:
    """A developer message that declares the tools a search loaded, or an additional_tools
    item added (none when there are none)."""
    functions = [tool_description(tool) for tool in tools if isinstance(tool, (FunctionTool, CustomTool))]
    namespaces = [tool for tool in tools if isinstance(tool, NamespaceTool)]
    if not functions and not namespaces:
        return []
    content = DeveloperContent.new()
    if functions:
        content = content.with_function_tools(functions)
    for namespace in namespaces:
        content = content.with_tools(namespace_config(namespace))
    return [Message.from_role_and_content(Role.DEVELOPER, content)]


def namespace_config(namespace: NamespaceTool) -> ToolNamespaceConfig:
    """A namespace tool as a harmony namespace of its own beside ``functions``."""
    return ToolNamespaceConfig(name=namespace.name, description=namespace.description,
                               tools=[tool_description(member) for member in namespace.tools])


def content_text(content: object) -> str:
    """The text of a message's content: a string or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise PromptError(f"Unsupported message content {type(content).__name__}.")
    # Separate parts so that their words do not run together.
    return "\n".join(part_text(part) for part in content)


def part_text(part: object) -> str:
    if isinstance(part, str):
        return part
    if not isinstance(part, dict):
        raise PromptError("Message content parts must be objects.")
    key = TEXT_PART_KEYS.get(str(part.get("type")))
    if key is None:
        raise PromptError(f"Unsupported content part type {part.get('type')!r}; this model reads text only.")
    return str(part.get(key) or "")


def joined_texts(parts: object) -> str:
    if not isinstance(parts, list):
        return ""
    texts = [str(part.get("text") or "") for part in parts if isinstance(part, dict)]
    return "\n".join(text for text in texts if text)
