"""``tool_choice: {"type": "allowed_tools", ...}`` as harmony recipients: which calls the
model may make, and what it is told when it makes another.

Every tool stays in the prompt (so that it, and the engine's prefix cache, are the same
whatever a turn allows). On vLLM, a structural tag (xgrammar's) holds the model to the
allowed recipients as it writes them; on every engine, the worker checks each call's
recipient when its header is complete and answers a call that is not allowed with a tool
message that says so, before anything of it reaches the client. ``mode: "required"`` also
prefills the start of a call (harmony/continuations.forced_call_prefix).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from responses_app.harmony import file_search
from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.harmony.messages import BROWSER_NAMESPACE, FUNCTIONS_NAMESPACE, PYTHON_RECIPIENT
from responses_app.wire.tool_types import WEB_SEARCH_TYPES, ToolReference

if TYPE_CHECKING:  # harmony runs without Django: models/__init__ is not imported at run time
    from responses_app.models.response_params import ToolChoice

# Where a harmony header names its recipient: "<|channel|>commentary to=functions.f" or
# "<|start|>assistant to=python".
RECIPIENT_TRIGGER = "to="


class AllowedCalls:
    """The recipients that an ``allowed_tools`` tool choice lets the model call: whole
    ones (``functions.get_weather``, ``python``) and namespaces (``docs.``, ``browser.``)."""

    def __init__(self, required: bool, tools: Iterable[ToolReference]) -> None:
        self.required = required
        self.recipients: set[str] = set()
        self.namespaces: set[str] = set()
        for tool in tools:
            kind = tool.type
            if kind in ("function", "custom"):
                self.recipients.add(f"{FUNCTIONS_NAMESPACE}.{tool.name}")
            elif kind in CLIENT_TOOLS:
                self.recipients.add(f"{FUNCTIONS_NAMESPACE}.{kind}")
            elif kind == "namespace" and tool.name is not None:
                self.namespaces.add(tool.name)
            elif kind == "mcp" and tool.name and tool.server_label is not None:
                self.recipients.add(f"{tool.server_label}.{tool.name}")
            elif kind == "mcp" and tool.server_label is not None:
                self.namespaces.add(tool.server_label)
            elif kind == "code_interpreter":
                self.recipients.add(PYTHON_RECIPIENT)
            elif kind in WEB_SEARCH_TYPES:
                self.namespaces.add(BROWSER_NAMESPACE)
            elif kind == "file_search":
                self.recipients.add(file_search.RECIPIENT)

    @classmethod
    def of(cls, tool_choice: ToolChoice) -> AllowedCalls | None:
        """None when the tool choice restricts nothing beyond what the prompt offers."""
        if tool_choice.allowed is None:
            return None
        return cls(tool_choice.mode == "required", tool_choice.allowed)

    def allows(self, recipient: str) -> bool:
        namespace, dot, _ = recipient.partition(".")
        return recipient in self.recipients or (bool(dot) and namespace in self.namespaces)

    def structural_tag(self) -> str:
        """vLLM's structured output for the allowed calls: wherever the model writes a
        recipient (``to=``, in the header's role or channel part), it goes on with an
        allowed one. The rest of the output, and what follows a recipient, stays free (the
        check above still refuses a name the tag lets through, such as an allowed name's
        longer neighbour)."""
        from xgrammar.structural_tag import AnyTextFormat, StructuralTag, TagFormat, TriggeredTagsFormat

        starts = sorted(self.recipients) + sorted(f"{namespace}." for namespace in self.namespaces)
        # Harmony's stop tokens end the tag as well ("": xgrammar allows no stop token inside a constraint).
        tags = [TagFormat(begin=RECIPIENT_TRIGGER + start, content=AnyTextFormat(), end=["<|end|>", ""])
                for start in starts]
        return StructuralTag(format=TriggeredTagsFormat(triggers=[RECIPIENT_TRIGGER], tags=tags)).model_dump_json()

    def refusal(self, recipient: str) -> str:
        """The tool message that answers a call the model may not make."""
        allowed = sorted(self.recipients | {f"{namespace}.*" for namespace in self.namespaces})
        return (f"Error: {recipient} may not be called in this turn. The tools you may call now are: "
                f"{', '.join(allowed)}. Call one of them{'' if self.required else ', or answer without a tool'}.")
