"""The tool loop's continuations of a prompt: a tool's result appended after the model's
call, the start of an assistant message prefilled (a continued response's open item, a
forced tool call), and the tokens the assistant wrote as the prompt renders them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from openai_harmony import Role

from responses_app.harmony import file_search
from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.harmony.encoding import get_encoding, markup_tokens
from responses_app.harmony.history import history_messages
from responses_app.harmony.messages import (
    BROWSER_NAMESPACE,
    FUNCTION_CALL_CONTENT_TYPE,
    FUNCTIONS_NAMESPACE,
    PYTHON_RECIPIENT,
    joined_texts,
    loaded_tools_messages,
    tool_output_message,
)
from responses_app.wire.tool_types import WEB_SEARCH_TYPES, LoadedTool, Tool, ToolReference, tool_reference

if TYPE_CHECKING:  # harmony runs without Django: models/__init__ is not imported at run time
    from responses_app.models.response_params import ToolChoice


def tool_result_tokens(author: str, text: str, channel: str, loaded: Sequence[LoadedTool] = ()) -> list[int]:
    """A tool's message to the assistant (and the declaration of the tools a search
    loaded), then the header of the assistant's next message: what the tool loop appends
    to the prompt after the model's call."""
    encoding = get_encoding()
    messages = [tool_output_message(author, text, channel), *loaded_tools_messages(loaded)]
    return [token for message in messages for token in encoding.render(message)] + list(
        markup_tokens("<|start|>assistant"))


def reopened_item_prefix(item: dict) -> list[int]:
    """The start of the assistant message that wrote ``item``, up to what its events gave
    so far: a continued response (worker/continuation.py) prefills it, and the model goes
    on from there. A web search's arguments are not kept: the model writes its call again
    after the namespace."""
    kind = item["type"]
    if kind == "reasoning":
        header, text = "<|channel|>analysis<|message|>", joined_texts(item.get("content"))
    elif kind == "message":
        channel = "commentary" if item.get("phase") == "commentary" else "final"
        header, text = f"<|channel|>{channel}<|message|>", joined_texts(item.get("content"))
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
        summary = joined_texts(item.get("summary")) if item.get("type") == "reasoning" else ""
        if summary:  # its own engine call's answer: "<|channel|>final<|message|>", the text, "<|return|>"
            output += len(encoding.encode(summary, disallowed_special=())) + 3 + (item.get("status") != "in_progress")
    return output, reasoning, opened


def forced_call_prefix(tool_choice: ToolChoice, tools: Sequence[Tool]) -> list[int]:
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


def _forced_header(tool_choice: ToolChoice, tools: Sequence[Tool]) -> str | None:
    if tool_choice.mode != "required":
        return None
    named = tool_choice.named
    if named is None:  # "required", or allowed_tools with mode "required": of the tools it names
        choices = list(tool_choice.allowed) if tool_choice.allowed is not None else [tool_reference(tool)
                                                                                     for tool in tools]
        if len(choices) != 1:
            return "<|channel|>commentary to="
        named = choices[0]
    return _call_header(named)


def _call_header(tool: ToolReference) -> str | None:
    """The header of a call to the one tool ``tool`` names."""
    kind = tool.type
    if kind == "namespace":
        return f"<|channel|>commentary to={tool.name}."
    if kind == "custom":
        return f"<|channel|>commentary to={FUNCTIONS_NAMESPACE}.{tool.name}<|message|>"
    if kind in ("function", *CLIENT_TOOLS):
        recipient = f"{FUNCTIONS_NAMESPACE}.{tool.function_name}"
        return f"<|channel|>commentary to={recipient} {FUNCTION_CALL_CONTENT_TYPE}<|message|>"
    if kind == "mcp":
        if tool.name:
            return f"<|channel|>commentary to={tool.server_label}.{tool.name} {FUNCTION_CALL_CONTENT_TYPE}<|message|>"
        return f"<|channel|>commentary to={tool.server_label}."
    if kind == "code_interpreter":
        return f"<|channel|>analysis to={PYTHON_RECIPIENT} code<|message|>"
    if kind in WEB_SEARCH_TYPES:
        return f"<|channel|>analysis to={BROWSER_NAMESPACE}.search code<|message|>"
    if kind == "file_search":
        return f"<|channel|>analysis to={file_search.RECIPIENT} {FUNCTION_CALL_CONTENT_TYPE}<|message|>"
    return None
