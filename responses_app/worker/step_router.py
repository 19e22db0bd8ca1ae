"""Where each step of the model's parsed output goes (worker/generation.py feeds them): a
call the request does not allow is refused, a server-side tool call goes to its ToolCall
(made off the loop), a client tool's call and a tool search's to theirs, and everything
else to the event builder, text deltas with their logprobs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from responses_app.harmony import file_search
from responses_app.harmony.allowed_calls import AllowedCalls
from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.harmony.continuations import MISSING_RECIPIENT
from responses_app.harmony.messages import FUNCTIONS_NAMESPACE, SEARCH_TOOL
from responses_app.harmony.parser import ContentDelta, MessageFinished, MessageKind, MessageStarted, ParserEvent
from responses_app.harmony.tool_search import search_tool
from responses_app.models.response_params import ResponseParams
from responses_app.stream.builder import EventBuilder
from responses_app.wire.tool_types import (
    ClientSideTool,
    CustomTool,
    NamespaceTool,
    ToolSearchTool,
    loaded_tools_from_stored,
)
from responses_app.worker.stop_sequences import StopSequences
from responses_app.worker.tools.base import ToolCall
from responses_app.worker.tools.client_calls import ClientToolCall
from responses_app.worker.tools.refused_calls import RefusedCall
from responses_app.worker.tools.tool_search_calls import ToolSearchCall

# Makes the server-side call the model began, named by its recipient, off the loop.
CallStarter = Callable[[str], Awaitable[ToolCall]]


class StepRouter:
    def __init__(self, request: ResponseParams, builder: EventBuilder, history: list[dict[str, Any]],
                 start: CallStarter, logprobs: bool, constrains: bool) -> None:
        self.builder = builder
        self._start = start
        self._logprobs = logprobs
        self._constrains = constrains  # the engine holds output to a grammar (vLLM)
        tools = request.tools
        self._tools = tools
        self.call: ToolCall | None = None  # the call being written
        self.ready_call: ToolCall | None = None  # a call written whole, for the tool loop
        # What this turn's prefilled call header holds of a recipient it left open (None: it left none).
        self.open_recipient: str | None = None
        # A server-side tool call the model has begun (its recipient), made off the loop
        # (a call may look up its container), and the parser's steps that came after it.
        self.starting_call: str | None = None
        self.held_steps: list[ContentDelta | MessageFinished] = []
        # The logprobs of the tokens since the last text delta (include message.output_text.logprobs).
        self.pending_logprobs: list[list[tuple[int, float]]] = []
        # Custom tools by name: a grammar format is enforced on a call's input.
        self.custom_tools = {tool.name: tool for tool in tools if isinstance(tool, CustomTool)}
        self.grammar: dict[str, Any] | None = None  # the grammar the call just started must keep to
        self.search_tool = search_tool(tools)
        # The tools in harmony's "functions" whose calls are not function_calls.
        self.call_kinds: dict[str, MessageKind] = {
            **{name: "custom_tool_call" for name in self.custom_tools},
            **{tool.type: "client_call" for tool in tools if isinstance(tool, ClientSideTool)},
            **({SEARCH_TOOL: "tool_search"} if self.search_tool is not None else {})}
        # Namespaces the model may call: the request's, and those a tool search loaded or an
        # additional_tools item added.
        loaded = [tool for item in history if item.get("type") in ("tool_search_output", "additional_tools")
                  for tool in loaded_tools_from_stored(item["tools"])]
        self.function_namespaces = frozenset(tool.name for tool in [*tools, *loaded] if isinstance(tool, NamespaceTool))
        self.allowed_calls = AllowedCalls.of(request.tool_choice)
        # A completion's stop sequences, on the text of the message being written (``answering``).
        self.stop_sequences = StopSequences(request.chat.stop) if request.chat.stop else None
        self.answering = False

    @property
    def stop_reached(self) -> bool:
        return self.stop_sequences is not None and self.stop_sequences.reached

    def take_ready_call(self) -> ToolCall | None:
        call, self.ready_call = self.ready_call, None
        return call

    def route(self, step: ParserEvent) -> None:
        """Server-side tool calls go to their ToolCall; everything else to the builder."""
        if isinstance(step, MessageStarted):
            self.answering = step.kind == "message"
        if isinstance(step, MessageStarted) and step.recipient and self.allowed_calls is not None \
                and not self.allowed_calls.allows(step.recipient):
            self.call = RefusedCall(step.recipient, step.channel, self.allowed_calls.refusal(step.recipient))
            return
        if isinstance(step, MessageStarted) and not step.recipient and self.open_recipient is not None:
            # The forced call's header was begun for the model, which left its recipient
            # empty: an answer where a call is required. Refused as a call is, and forced again.
            self.call = RefusedCall(self.open_recipient.rstrip(".") or FUNCTIONS_NAMESPACE, step.channel,
                                    MISSING_RECIPIENT)
            return
        if isinstance(step, MessageStarted) and step.kind == "custom_tool_call":
            custom = self.custom_tools.get(step.name or "")
            self.grammar = custom.format() if custom is not None and custom.grammar is not None else None
        if isinstance(step, MessageStarted) and step.kind == "tool_call":
            self.starting_call = step.recipient or ""
            if step.recipient == file_search.RECIPIENT and self._constrains:
                # Its arguments held to their JSON schema (on vLLM), as a custom tool's input to its grammar.
                self.grammar = file_search.ARGUMENTS_GRAMMAR
        elif self.starting_call is not None and isinstance(step, (ContentDelta, MessageFinished)):
            self.held_steps.append(step)
        elif isinstance(step, MessageStarted) and step.kind == "client_call":
            self.call = ClientToolCall(self.builder, CLIENT_TOOLS[step.name or ""])
        elif isinstance(step, MessageStarted) and step.kind == "tool_search":
            self.call = ToolSearchCall(self.builder, self.search_tool or ToolSearchTool(), self._tools)
        elif self.call is not None and isinstance(step, ContentDelta):
            self.call.delta(step.text)
        elif self.call is not None and isinstance(step, MessageFinished):
            self.call.finished(step.text)
            self.ready_call, self.call = self.call, None
        elif self.stop_sequences is not None and self.answering and not isinstance(step, MessageStarted):
            self._answer_step(self.stop_sequences, step)
        else:
            self._to_builder(step)
        if not isinstance(step, ContentDelta):
            self.pending_logprobs = []  # header and end tokens belong to no text

    def _to_builder(self, step: ParserEvent) -> None:
        if isinstance(step, ContentDelta) and self._logprobs:
            # A delta's logprobs are those of the tokens that made it (a character may span two).
            logprobs, self.pending_logprobs = self.pending_logprobs, []
            self.builder.apply(step, logprobs=logprobs)
        else:
            self.builder.apply(step)

    def _answer_step(self, stops: StopSequences, step: ContentDelta | MessageFinished) -> None:
        """The message's text as far as the stop sequences let it be seen; the text held
        back for a sequence that may be beginning comes with the next delta, or the end."""
        if stops.reached:
            return  # the turn ends at the sequence (worker/generation.py)
        if isinstance(step, ContentDelta):
            logprobs, self.pending_logprobs = self.pending_logprobs, []
            self._shown_text(*stops.feed(step.text, logprobs))
            return
        self.flush_held()  # with its deltas' logprobs; the end token's are dropped by route()
        self.builder.apply(step)

    def flush_held(self) -> None:
        """The text held back for a stop sequence that did not come: its message ended, or
        the budget did."""
        if self.stop_sequences is not None and not self.stop_sequences.reached:
            self._shown_text(*self.stop_sequences.flush())

    def _shown_text(self, text: str, logprobs: list[list[tuple[int, float]]]) -> None:
        if text:
            self.builder.apply(ContentDelta(text), logprobs=logprobs if self._logprobs else None)

    async def start_call(self) -> None:
        """Make the server-side tool call that the model has begun (off the loop), and give it
        the steps held meanwhile."""
        if self.starting_call is None:
            return
        recipient, self.starting_call = self.starting_call, None
        self.call = await self._start(recipient)
        held, self.held_steps = self.held_steps, []
        for step in held:
            self.route(step)
