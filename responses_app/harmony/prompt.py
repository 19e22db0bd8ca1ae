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
)

from responses_app.harmony.encoding import get_encoding

FUNCTIONS_NAMESPACE = "functions"
# Harmony prescribes this content type for function call arguments.
FUNCTION_CALL_CONTENT_TYPE = "<|constrain|>json"

_EFFORTS = {"low": ReasoningEffort.LOW, "medium": ReasoningEffort.MEDIUM, "high": ReasoningEffort.HIGH}
# Content part types whose text the model sees; the rest (images, files) gpt-oss cannot read.
_TEXT_PART_KEYS = {"input_text": "text", "output_text": "text", "text": "text", "refusal": "refusal"}


class PromptError(ValueError):
    """The request cannot be expressed as a harmony conversation."""


@dataclass(frozen=True)
class PromptRequest:
    # OpenAI Responses item dicts, oldest first: the items of the whole
    # previous_response_id chain, then this response's input items.
    history: list[dict]
    instructions: str | None = None
    reasoning_effort: str | None = None  # "low" | "medium" | "high"; None = medium
    tools: list[dict] = field(default_factory=list)  # OpenAI function tools
    tool_choice: str | dict = "auto"  # "none" => no tools are offered to the model
    conversation_date: str | None = None  # YYYY-MM-DD


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
    effort = _EFFORTS.get(effort_name)
    if effort is None:
        raise PromptError(f"Unsupported reasoning effort {request.reasoning_effort!r}; use low, medium or high.")
    content = SystemContent.new().with_reasoning_effort(effort)
    if request.conversation_date:
        content = content.with_conversation_start_date(request.conversation_date)
    return Message.from_role_and_content(Role.SYSTEM, content)


def _developer_message(request: PromptRequest) -> Message | None:
    tools = [_tool_description(tool) for tool in offered_function_tools(request.tools, request.tool_choice)]
    if not request.instructions and not tools:
        return None
    content = DeveloperContent.new()
    if request.instructions:
        content = content.with_instructions(request.instructions)
    if tools:
        content = content.with_function_tools(tools)
    return Message.from_role_and_content(Role.DEVELOPER, content)


def offered_function_tools(tools: list[dict], tool_choice: str | dict) -> list[dict]:
    """The function tools the model is told about.

    Harmony cannot force a call, so a forced choice only narrows what is offered:
    ``"none"`` offers nothing, ``{"type": "function", "name": X}`` offers only X and
    ``{"type": "allowed_tools", "tools": [...]}`` offers the listed functions. Non-function
    tools (built-in tools) are rendered elsewhere.
    """
    functions = [tool for tool in tools if tool.get("type", "function") == "function"]
    if tool_choice == "none":
        return []
    if isinstance(tool_choice, dict):
        allowed = _allowed_function_names(tool_choice)
        if allowed is not None:
            return [tool for tool in functions if tool.get("name") in allowed]
    return functions


def _allowed_function_names(tool_choice: dict) -> set[str] | None:
    choice_type = tool_choice.get("type")
    if choice_type == "function":
        return {tool_choice.get("name")}
    if choice_type == "allowed_tools":
        return {tool.get("name") for tool in tool_choice.get("tools", []) if tool.get("type") == "function"}
    return None


def _tool_description(tool: dict) -> ToolDescription:
    name = tool.get("name")
    if not name:
        raise PromptError("A function tool needs a name.")
    return ToolDescription.new(name, tool.get("description") or "", tool.get("parameters"))


# --- history items ---------------------------------------------------------------------


def history_messages(history: list[dict]) -> list[Message]:
    """Map Responses items to harmony messages, in order."""
    call_names: dict[str, str] = {}  # call_id -> function name, for the outputs that follow
    messages: list[Message] = []
    for index, item in enumerate(history):
        item_type = _item_type(item)
        renderer = ITEM_RENDERERS.get(item_type)
        if renderer is None:
            raise PromptError(f"Input item {index} has unsupported type {item_type!r}.")
        if item_type == "function_call":
            call_names[str(item.get("call_id"))] = _function_name(item, index)
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
        return Message.from_role_and_content(Role.ASSISTANT, text).with_channel("final")
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
        .with_recipient(f"{FUNCTIONS_NAMESPACE}.{name}")
        .with_content_type(FUNCTION_CALL_CONTENT_TYPE)
    )


def _function_call_output(item: dict, call_names: dict[str, str]) -> Message:
    call_id = str(item.get("call_id"))
    name = call_names.get(call_id)
    if name is None:
        raise PromptError(f"No function_call with call_id {call_id!r} precedes its function_call_output.")
    author = Author.new(Role.TOOL, f"{FUNCTIONS_NAMESPACE}.{name}")
    return (
        Message.from_author_and_content(author, _output_text(item.get("output")))
        .with_channel("commentary")
        .with_recipient("assistant")
    )


def _function_name(item: dict, index: int) -> str:
    name = item.get("name")
    if not name or not item.get("call_id"):
        raise PromptError(f"Input item {index} (function_call) needs a call_id and a name.")
    return str(name)


def _output_text(output: object) -> str:
    if isinstance(output, str):
        return output
    if isinstance(output, list):
        return content_text(output)
    return json.dumps(output)


ItemRenderer = Callable[[dict, dict[str, str]], Message | None]
# Item type -> renderer; other modules may register built-in tool items here.
ITEM_RENDERERS: dict[str, ItemRenderer] = {
    "message": _message,
    "reasoning": _reasoning,
    "function_call": _function_call,
    "function_call_output": _function_call_output,
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
