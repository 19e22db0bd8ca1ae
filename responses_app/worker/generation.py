"""The model's output for one response: engine turns, each parsed one token at a time into
the event builder, with the tool loop between them.

Runs on the process's engine loop (engines/host.py), as every response the process runs:
the ORM work and the tool calls go off the loop (worker/off_loop.py).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from django.conf import settings
from openai.types.responses import ResponseCompactionCompactingEvent

from responses_app.context import compaction
from responses_app.context.history import ChainBroken, PromptTooLong, fit_prompt, response_history, response_prompt
from responses_app.engines.base import EngineDead, SamplingParams
from responses_app.engines.host import engine_host
from responses_app.harmony import file_search
from responses_app.harmony.allowed_calls import AllowedCalls
from responses_app.harmony.client_tools import CLIENT_TOOLS
from responses_app.harmony.encoding import stop_token_ids
from responses_app.harmony.parser import (
    ContentDelta,
    HarmonyOutputError,
    MessageFinished,
    MessageKind,
    MessageStarted,
    OutputParser,
    ParserEvent,
)
from responses_app.harmony.prompt import (
    FUNCTIONS_NAMESPACE,
    MISSING_RECIPIENT,
    SEARCH_TOOL,
    PromptError,
    assistant_tokens,
    forced_call_prefix,
    open_recipient,
    reopened_item_prefix,
    summary_prompt,
    tool_result_tokens,
)
from responses_app.harmony.tool_search import search_tool
from responses_app.lib.db_outage import read_on_a_live_connection
from responses_app.lib.ids import new_id
from responses_app.models import Response, ResponseStatus
from responses_app.stream.builder import MESSAGE_ITEM_TYPES, EventBuilder
from responses_app.stream.resume import ResumePoint
from responses_app.wire.usage import Usage
from responses_app.worker.batch_writer import BatchWriter, CancelRequested
from responses_app.worker.cancel_watch import cancel_watch
from responses_app.worker.client_calls import ClientToolCall
from responses_app.worker.continuation import ended_with, has_called, open_item_action
from responses_app.worker.off_loop import OffLoop
from responses_app.worker.refused_calls import RefusedCall
from responses_app.worker.tool_calls import Toolbox, ToolCall, ToolLoopFailure, run_in_thread
from responses_app.worker.tool_search_calls import ToolSearchCall

log = logging.getLogger(__name__)
T = TypeVar("T")
# compaction_trigger: a response.compaction.compacting event per this many characters of summary sampled.
COMPACTING_EVENT_CHARS = 256
LOGPROBS_INCLUDE = "message.output_text.logprobs"

# Items whose harmony message is on the analysis channel: its tokens are reasoning tokens.
ANALYSIS_ITEM_TYPES = frozenset({"reasoning", "code_interpreter_call", "web_search_call", "file_search_call"})


class ResponseFailure(Exception):
    """Ends the response as failed with this message (shown to the client). ``code`` is
    one of the SDK's ResponseError codes (server_error, invalid_prompt, ...)."""

    def __init__(self, message: str, code: str = "server_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


async def generate(
    response: Response, builder: EventBuilder, writer: BatchWriter, usage: Usage, off_loop: OffLoop,
    resumed: ResumePoint | None = None,
) -> tuple[str, dict[str, Any] | None]:
    """Generate the response's output: engine turns and, between them, the tool calls.
    ``resumed``: where the stream of a lost worker stopped, to continue from there
    (worker/continuation.py). Returns the terminal status and incomplete_details; raises
    ResponseFailure, CancelRequested or LeaseLost."""
    try:
        history = await off_loop.database(read_on_a_live_connection, response_history, response)
    except ChainBroken as error:
        raise ResponseFailure(str(error), code="invalid_prompt") from error
    await writer.flush()  # response.in_progress goes out before the first token
    generation = Generation(response, builder, writer, usage, history, off_loop)
    try:
        if response.request.get("compaction_trigger"):
            await generation.compact_on_trigger(history)
            return ResponseStatus.COMPLETED, None
        reopened = await generation.resume(resumed) if resumed is not None and resumed.output else None
        if reopened is None and resumed is not None and (end := ended_with(builder.output)) is not None:
            return end  # the lost worker had written all of it
        if generation.toolbox.preparing():
            await generation.in_tool_thread(generation.toolbox.prepare)
        # A reopened item is written again by the model, after the output before it.
        before = builder.output if reopened is None else builder.output[:-1]
        prompt = await off_loop.database(_prompt, response, history, before)
        if reopened is None and _compaction_due(response, len(prompt), builder.output):
            await generation.compact(history)
            # The compaction item now stands for the rest.
            prompt = await off_loop.database(_prompt, response, history, builder.output)
        return await generation.run(prompt, reopened)
    except ToolLoopFailure as error:
        raise ResponseFailure(str(error), code="server_error") from error
    except HarmonyOutputError as error:
        writing = f" in its {builder.open_item['type']} {builder.open_item['id']}" if builder.open_item else ""
        raise ResponseFailure(f"The model produced output that is not valid harmony{writing}: {error}",
                              code="server_error") from error
    except EngineDead as error:
        raise ResponseFailure(f"The model engine stopped while generating this response: {error}",
                              code="server_error") from error
    finally:
        generation.count_usage()


def _compaction_due(response: Response, prompt_tokens: int, output: list[dict[str, Any]]) -> bool:
    """context_management: the prompt has passed its compaction threshold (by default 80%
    of the model's context), and this response has not compacted it yet (a retry after a
    lost worker finds its compaction item in its output)."""
    entries = [entry for entry in response.request.get("context_management") or [] if entry["type"] == "compaction"]
    if not entries or any(item["type"] == "compaction" for item in output):
        return False
    threshold = entries[0].get("compact_threshold")
    if threshold is None:
        threshold = int(0.8 * (settings.MODEL_REGISTRY[response.model].get("max_model_len") or 0)) or None
    return threshold is not None and prompt_tokens > threshold


def _prompt(response: Response, history: list[dict[str, Any]], output: list[dict[str, Any]]) -> list[int]:
    try:
        prompt, dropped = response_prompt(response, output, items=history)
    except (PromptError, PromptTooLong) as error:
        raise ResponseFailure(str(error), code="invalid_prompt") from error
    if dropped > response.truncated_items:
        # truncation "auto" dropped history items: the row says how many (the most in any turn).
        Response.objects.filter(pk=response.pk).update(truncated_items=dropped)
        response.truncated_items = dropped
    return prompt


@dataclass
class TurnEnd:
    """How one engine turn ended: with a server-side tool call to run, or with the response's end."""

    tokens: list[int]  # the assistant's tokens this turn (a prefilled header included)
    call: ToolCall | None = None
    status: str = ResponseStatus.COMPLETED
    details: dict[str, Any] | None = None


class Generation:
    """The model's output for one response: turns of the engine, each parsed one token at a
    time into the event builder, with the tool loop between them. The prompt of each turn is
    the previous one plus the model's tokens and the tool's message, so vLLM's prefix cache
    holds all but the new tokens."""

    def __init__(self, response: Response, builder: EventBuilder, writer: BatchWriter, usage: Usage,
                 history: list[dict[str, Any]], off_loop: OffLoop) -> None:
        self.response = response
        self.off_loop = off_loop
        self.builder = builder
        self.writer = writer
        self.usage = usage
        self.parsers: list[OutputParser] = []
        self.tokens: list[int] = []  # this turn's
        self.call: ToolCall | None = None
        # What this turn's prefilled call header holds of a recipient it left open (None: it left none).
        self.open_recipient: str | None = None
        # A server-side tool call the model has begun (its recipient), made off the loop
        # (a call may look up its container), and the parser's steps that came after it.
        self.starting_call: str | None = None
        self.held_steps: list[ContentDelta | MessageFinished] = []
        self.ready_call: ToolCall | None = None
        request = response.request
        self.budget: int | None = request.get("max_output_tokens")
        self.params = SamplingParams(
            max_tokens=self.budget,
            temperature=request.get("temperature"),
            top_p=request.get("top_p"),
            presence_penalty=request.get("presence_penalty"),
            frequency_penalty=request.get("frequency_penalty"),
            logprobs=request.get("top_logprobs", 0) if LOGPROBS_INCLUDE in (request.get("include") or []) else None,
            stop_token_ids=stop_token_ids(),
            metadata=request.get("metadata") or {},
        )
        # The logprobs of the tokens since the last text delta (include message.output_text.logprobs).
        self.pending_logprobs: list[list[tuple[int, float]]] = []
        self.summary_style: str | None = (request.get("reasoning") or {}).get("summary")
        self.summary_tokens = 0  # the output of the reasoning summaries' engine calls
        # A continued response: the output (and reasoning) tokens its lost worker generated.
        self.prior_output_tokens = 0
        self.prior_reasoning_tokens = 0
        # Its first message's "<|start|>assistant", counted as output by the lost worker's
        # count (harmony/prompt.assistant_tokens): reasoning too if that message is.
        self.opened_tokens = 0
        self.compaction_tokens = 0  # a compaction's (not charged to max_output_tokens)
        self.summaries = 0
        # Custom tools by name: their input format; a grammar is enforced on a call's input.
        self.custom_formats = {tool["name"]: tool["format"] for tool in request.get("tools", [])
                               if tool["type"] == "custom"}
        self.grammar: dict[str, Any] | None = None  # the grammar the call just started must keep to
        self.constrains = settings.MODEL_REGISTRY[response.model]["engine"] == "vllm"
        self.search_tool = search_tool(request.get("tools", []))
        # The tools in harmony's "functions" whose calls are not function_calls.
        self.call_kinds: dict[str, MessageKind] = {
            **{name: "custom_tool_call" for name in self.custom_formats},
            **{tool["type"]: "client_call" for tool in request.get("tools", []) if tool["type"] in CLIENT_TOOLS},
            **({SEARCH_TOOL: "tool_search"} if self.search_tool is not None else {})}
        # Namespaces the model may call: the request's, and those a tool search loaded or an
        # additional_tools item added.
        loaded = [tool for item in history if item.get("type") in ("tool_search_output", "additional_tools")
                  for tool in item["tools"]]
        self.function_namespaces = frozenset(tool["name"] for tool in [*request.get("tools", []), *loaded]
                                             if tool["type"] == "namespace")
        self.output_format: dict[str, Any] = (request.get("text") or {}).get("format") or {"type": "text"}
        self.allowed_calls = AllowedCalls.of(request.get("tool_choice"))
        if self.allowed_calls is not None and self.constrains:
            # vLLM holds the model to the allowed recipients; the check in _route stays.
            self.params = replace(self.params, extra={**self.params.extra,
                                                      "structural_tag": self.allowed_calls.structural_tag()})
        # The toolbox runs in a tool thread (in_tool_thread): it commits and ticks through the loop.
        self.toolbox = Toolbox(response, builder, history, flush=self._flush_from_thread,
                               wait=lambda work: run_in_thread(work, writer.tick_from_thread))

    async def _flush(self) -> None:
        if await self.writer.flush():
            raise CancelRequested()

    def _flush_from_thread(self) -> None:
        if self.writer.flush_from_thread():
            raise CancelRequested()

    async def in_tool_thread(self, function: Callable[..., T], *args: Any) -> T:
        """Run the response's own code (a tool call, with its items and events) in a tool
        thread; meanwhile its builder is that thread's (the writer is lent to it)."""
        self.writer.lent = True
        try:
            return await self.off_loop.tool(function, *args)
        finally:
            self.writer.lent = False

    @property
    def parser(self) -> OutputParser:
        return self.parsers[-1]

    async def run(self, prompt: list[int], reopened: list[int] | None = None) -> tuple[str, dict[str, Any] | None]:
        """``reopened``: the start of the item a lost worker left open, which the first
        turn prefills for the model to go on writing (its events were sent already)."""
        request = self.response.request
        forced = ([] if has_called(self.builder.output)
                  else forced_call_prefix(request.get("tool_choice", "auto"), request.get("tools", [])))
        prefill = forced if reopened is None else reopened
        base_id = f"{self.response.pk}:{self.response.attempts}"
        for turn in range(settings.MAX_TOOL_TURNS):
            end = await self._turn(prompt, prefill, base_id if turn == 0 else f"{base_id}:turn{turn}",
                                   reopening=turn == 0 and reopened is not None)
            if end.call is None:
                return end.status, end.details
            if not isinstance(end.call, RefusedCall):
                forced = []  # the forced call is made; a refused one is forced again
            prefill = forced
            result = await self.in_tool_thread(end.call.execute)
            if result is None:
                return ResponseStatus.COMPLETED, None  # waits for the client: an approval, a client tool's output
            prompt = prompt + end.tokens + tool_result_tokens(result.author, result.text, result.channel, result.loaded)
            await self.writer.tick()
        raise ResponseFailure(f"The model was still calling tools after {settings.MAX_TOOL_TURNS} turns.")

    def count_usage(self) -> None:
        self.usage.output_tokens = (self._generated() + self.compaction_tokens)
        self.usage.reasoning_tokens = (sum(parser.reasoning_tokens for parser in self.parsers)
                                       + self.prior_reasoning_tokens)

    def _generated(self) -> int:
        """Output tokens so far, which max_output_tokens bounds (a compaction's are not)."""
        return sum(parser.output_tokens for parser in self.parsers) + self.summary_tokens + self.prior_output_tokens

    def _remaining(self) -> int | None:
        if self.budget is None:
            return None
        return max(self.budget - self._generated(), 0)

    async def resume(self, point: ResumePoint) -> list[int] | None:
        """Take over the output a lost worker wrote (worker/continuation.py): count what it
        generated, and decide the item it left open. Returns the prefill that reopens that
        item, for the model to go on writing it; None when nothing is reopened."""
        item = point.open_item
        read_only = item is not None and item["type"] == "mcp_call" and self.toolbox.read_only(item["server_label"],
                                                                                                item["name"])
        action = open_item_action(point, read_only) if item is not None else None
        # The open item's message counts when it is whole (a call's, a reasoning item's
        # waiting for its summary); a reopened one's start is the prefill's.
        self.prior_output_tokens, self.prior_reasoning_tokens, self.opened_tokens = assistant_tokens(
            point.closed_output if action == "reopen" else point.output,
            continued=item is not None or ended_with(point.output) is None)
        if item is None:
            return None
        if action == "summarize":
            await self._summarize()
            return None
        if item["type"] not in MESSAGE_ITEM_TYPES:  # a server-side call: the next of its kind takes it over
            self.toolbox.adopted, self.toolbox.adopted_events = item, point.open_item_events
        if action == "reopen":
            prefill = reopened_item_prefix(item)
            self.prior_output_tokens += len(prefill)
            if item["type"] in ANALYSIS_ITEM_TYPES:  # its message's header is reasoning, its start too
                self.prior_reasoning_tokens += len(prefill) + self.opened_tokens
            self.opened_tokens = 0
            return prefill
        if item["type"] in ("code_interpreter_call", "mcp_call"):
            await self.in_tool_thread(self.toolbox.take_over, action == "rerun")
        return None  # an MCP listing or a compaction is made again where it is made

    async def _turn(self, prompt: list[int], prefill: list[int], request_id: str,
                    reopening: bool = False) -> TurnEnd:
        """``reopening``: the prefill is the start of an item whose events were sent."""
        self.parsers.append(OutputParser(function_namespaces=self.function_namespaces, call_kinds=self.call_kinds))
        self.parser.carry_header_tokens(self.opened_tokens)  # a continued turn's first message
        self.opened_tokens = 0
        self.tokens = []
        if self._remaining() == 0:  # the earlier turns spent the budget
            return TurnEnd([], status=ResponseStatus.INCOMPLETE, details={"reason": "max_output_tokens"})
        self.tokens = list(prefill)
        self.open_recipient = open_recipient(prefill)
        for step in self.parser.prefill(prefill):
            if reopening and not (isinstance(step, MessageStarted) and step.kind == "tool_call"):
                continue  # the builder holds the item as its events gave it; a tool call takes its item over
            self._route(step)
        await self._start_call()
        constrained = self.output_format["type"] != "text"
        # Structured outputs constrain the final answer only, so that reasoning stays free:
        # the first engine call stops where the final message begins, and a second one,
        # under the grammar, continues from there (vLLM's prefix cache holds the start).
        stop = ("grammar" if self.grammar is not None  # a forced custom tool call, prefilled
                else await self._engine_call(prompt + self.tokens, self.params, request_id,
                                             stop_at_final=constrained))
        part = 0
        while stop in ("summary", "grammar"):
            # The model goes on where it stopped (vLLM's prefix cache holds the prompt and its
            # tokens so far): after a reasoning item's summary, or, under its grammar, in the
            # input of a custom tool call that it has just begun.
            part += 1
            params = self.params
            if stop == "summary":
                await self._summarize()
                if cancel_watch().steer_requested(self.response.pk):
                    stop = "steered"
                    break
            else:
                params = replace(self.params, extra={**self.params.extra, "grammar": self.grammar})
                self.grammar = None
            if self._remaining() == 0:  # the summary spent what was left of the budget
                stop = None
                break
            stop = await self._engine_call(prompt + self.tokens, params, f"{request_id}:part{part}",
                                           stop_at_final=constrained and "grammar" not in params.extra)
        if stop == "steered":
            return TurnEnd(self.tokens, status=ResponseStatus.INCOMPLETE, details={"reason": "steered"})
        if stop == "final" and self._remaining() != 0:
            params = replace(self.params, max_tokens=self._remaining(),
                             extra={**self.params.extra, **_format_constraint(self.output_format)})
            stop = await self._engine_call(prompt + self.tokens, params, f"{request_id}:final", stop_at_final=False)
        if stop != "tool_call" and self._remaining() == 0 and self.parser.last_stop_token is None:
            # The budget cut the output off, maybe mid-header: what was open stays incomplete.
            try:
                closing = self.parser.close()
            except HarmonyOutputError:
                closing = []
            if self.call is None:
                for step in closing:
                    if not isinstance(step, MessageFinished):
                        self.builder.apply(step)
            self.builder.close_open_item()
            return TurnEnd(self.tokens, status=ResponseStatus.INCOMPLETE, details={"reason": "max_output_tokens"})
        if stop != "tool_call":
            for step in self.parser.close():
                self._route(step)
            await self._start_call()
            if self.builder.summary_due is not None:  # the output ended right after a reasoning item
                await self._summarize()
        call, self.ready_call = self.ready_call, None
        return TurnEnd(self.tokens, call=call)

    async def _engine_call(self, prompt: list[int], params: SamplingParams, request_id: str,
                           stop_at_final: bool) -> str | None:
        """Stream one engine request; why it stopped early ("final", "tool_call", "steered") or None."""
        self.usage.input_tokens += len(prompt)
        params = replace(params, max_tokens=self._remaining())
        produced = len(self.tokens)
        try:
            return await self._stream(prompt, params, request_id, stop_at_final)
        except EngineDead:
            if len(self.tokens) > produced:
                raise
            # The engine died before this request produced anything (it was submitted in
            # the moment between the death and its discovery): the host has a new engine.
            log.warning("%s: engine died before the first token; retrying on a new engine", request_id)
            return await self._stream(prompt, params, f"{request_id}:retry", stop_at_final)

    async def _stream(self, prompt: list[int], params: SamplingParams, request_id: str,
                      stop_at_final: bool) -> str | None:
        stream = engine_host().stream(self.response.model, prompt, params, request_id=request_id)
        async with aclosing(stream):  # leaving early aborts the engine request
            async for chunk in stream:
                if chunk is not None:
                    if chunk.cached_tokens:
                        self.usage.cached_tokens += chunk.cached_tokens
                    for index, token_id in enumerate(chunk.token_ids):
                        if chunk.logprobs is not None:
                            self.pending_logprobs.append(chunk.logprobs[index])
                        progress = self._feed(token_id)
                        if self.starting_call is not None:
                            await self._start_call()
                        if self.ready_call is not None:
                            return "tool_call"  # a call ended with <|end|> rather than <|call|>
                        if self.builder.summary_due is not None:
                            return "summary"
                        if self.grammar is not None:
                            return "grammar"
                        if self._steered_at(progress):
                            return "steered"
                        if stop_at_final and any(isinstance(step, MessageStarted) and step.channel == "final"
                                                 for step in progress):
                            return "final"
                    self.count_usage()
                await self.writer.tick()
        return None

    async def compact(self, history: list[dict[str, Any]]) -> None:
        """context_management: the served model summarizes the context (as a compaction
        turn does, POST /responses/compact) in an engine call of its own; the summary
        becomes this response's first output item, a ``compaction`` item, which stands for
        all but the user's messages in this prompt and in every later turn's."""
        summary = await self._compaction_summary([*history, *self.builder.output], lambda text: None)
        if summary is None:
            return  # the context is kept whole
        self.builder.add_item(compaction.compaction_item(summary))
        self.builder.finish_item(None)
        await self._flush()

    async def compact_on_trigger(self, history: list[dict[str, Any]]) -> None:
        """An input that ends with ``compaction_trigger`` (Codex's inline compaction): the
        response's one output item is the ``compaction`` item of the context before it.
        The item is added at once, ``response.compaction.compacting`` events (no content)
        follow as the summary is sampled, and ``response.output_item.done`` carries it sealed."""
        if self.builder.open_item is None:  # else: the item a lost worker opened is summarized again
            if self.builder.output:
                return  # a lost worker finished it
            self.builder.add_item({"id": new_id("cmp"), "type": "compaction", "encrypted_content": ""})
            await self._flush()
        sampled = 0

        def progress(text: str) -> None:
            nonlocal sampled
            if sampled == 0 or (sampled + len(text)) // COMPACTING_EVENT_CHARS > sampled // COMPACTING_EVENT_CHARS:
                self.builder.item_event(ResponseCompactionCompactingEvent, "response.compaction.compacting")
            sampled += len(text)

        summary = await self._compaction_summary(history, progress)  # the output is only the open item
        if summary is None:
            raise ResponseFailure("The context could not be compacted: the model did not finish its summary.",
                                  code="server_error")
        self.builder.update_item(encrypted_content=compaction.sealed(summary))
        self.builder.finish_item(None)

    async def _compaction_summary(self, context: list[dict[str, Any]],
                                  on_text: Callable[[str], None]) -> str | None:
        """The served model's summary of ``context`` (its tokens count in usage, not against
        max_output_tokens); None when there is none, or it was cut off: such a summary must
        not stand for the context."""
        # As POST /responses/compact's turn: no tools, and the oldest items dropped should
        # the context and the request not fit the model together.
        params = {**self.response.request, "tools": [], "tool_choice": "none", "truncation": "auto"}
        items = [*context, compaction.summary_request_item()]
        try:
            prompt, _ = fit_prompt(self.response.model, params, items, [], self.response.created_at.date())
        except (PromptError, PromptTooLong) as error:
            log.warning("%s: the context cannot be compacted (%s)", self.response.pk, error)
            return None
        parts: list[str] = []

        def answer(text: str) -> None:
            parts.append(text)
            on_text(text)

        tokens, finished = await self._side_call(prompt, settings.COMPACTION_MAX_OUTPUT_TOKENS, "compaction",
                                                 answer, budgeted=False)
        self.compaction_tokens += tokens
        self.count_usage()
        summary = "".join(parts).strip()
        if not finished or not summary:
            log.warning("%s: the compaction summary did not finish", self.response.pk)
            return None
        return summary

    async def _summarize(self) -> None:
        """reasoning.summary: the served model writes a summary of the reasoning item it has
        just finished, in an engine call of its own, streamed into that item's summary
        before the model goes on."""
        self.summaries += 1
        prompt, cap = summary_prompt(self.builder.summary_due or "", self.summary_style or "auto")
        # A lost worker's summary so far: the model goes on from it.
        written = self.builder.summary_written
        tokens, _ = await self._side_call(prompt, cap, f"summary{self.summaries}", self.builder.summary_delta,
                                          prefill=written)
        self.summary_tokens += tokens
        self.count_usage()
        self.builder.finish_summary()

    async def _side_call(self, prompt: list[int], cap: int, name: str, on_answer: Callable[[str], None],
                         budgeted: bool = True, prefill: str = "") -> tuple[int, bool]:
        """An engine call beside the response's own (a summary): its final answer's text
        goes to ``on_answer`` as it comes (after ``prefill``, the start of the answer
        already written). Returns its output tokens (which count in usage; ``budgeted``:
        also against max_output_tokens) and whether its answer finished."""
        remaining = self._remaining() if budgeted else None
        max_tokens = cap if remaining is None else min(cap, remaining)
        if max_tokens == 0:
            return 0, False
        parser, in_answer, finished = OutputParser(), False, False
        if prefill:
            prefilled = reopened_item_prefix({"type": "message", "content": [{"text": prefill}]})
            prompt = prompt + prefilled
            parser.prefill(prefilled)
            in_answer = True
        self.usage.input_tokens += len(prompt)
        params = SamplingParams(max_tokens=max_tokens, stop_token_ids=stop_token_ids())
        request_id = f"{self.response.pk}:{self.response.attempts}:{name}"
        stream = engine_host().stream(self.response.model, prompt, params, request_id=request_id)
        try:
            async with aclosing(stream):
                async for chunk in stream:
                    for token_id in chunk.token_ids if chunk is not None else []:
                        for step in parser.feed(token_id):
                            if isinstance(step, MessageStarted):
                                in_answer = step.channel == "final"
                            elif isinstance(step, ContentDelta) and in_answer:
                                on_answer(step.text)
                            elif isinstance(step, MessageFinished) and in_answer:
                                finished = True
                    await self.writer.tick()
        except HarmonyOutputError as error:
            log.warning("%s: the output is not harmony (%s); keeping what came", request_id, error)
        return parser.output_tokens, finished

    def _steered_at(self, progress: list[ParserEvent]) -> bool:
        """Steering input is queued and the model has just finished a reasoning item: the
        safe boundary to stop at (never inside a tool call or a message harmony needs
        whole; a final answer is let finish, and its successor follows it as well)."""
        return (any(isinstance(step, MessageFinished) and step.kind == "reasoning" for step in progress)
                and cancel_watch().steer_requested(self.response.pk))

    def _feed(self, token_id: int) -> list[ParserEvent]:
        self.tokens.append(token_id)
        progress = self.parser.feed(token_id)
        for step in progress:
            self._route(step)
        return progress

    def _route(self, step: MessageStarted | ContentDelta | MessageFinished) -> None:
        """Server-side tool calls go to their ToolCall; everything else to the builder."""
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
            tool_format = self.custom_formats.get(step.name or "") or {}
            self.grammar = tool_format if tool_format.get("type") == "grammar" else None
        if isinstance(step, MessageStarted) and step.kind == "tool_call":
            self.starting_call = step.recipient or ""
            if step.recipient == file_search.RECIPIENT and self.constrains:
                # Its arguments held to their JSON schema (on vLLM), as a custom tool's input to its grammar.
                self.grammar = file_search.ARGUMENTS_GRAMMAR
        elif self.starting_call is not None and isinstance(step, (ContentDelta, MessageFinished)):
            self.held_steps.append(step)
        elif isinstance(step, MessageStarted) and step.kind == "client_call":
            self.call = ClientToolCall(self.builder, CLIENT_TOOLS[step.name or ""])
        elif isinstance(step, MessageStarted) and step.kind == "tool_search":
            self.call = ToolSearchCall(self.builder, self.search_tool or {}, self.response.request.get("tools", []))
        elif self.call is not None and isinstance(step, ContentDelta):
            self.call.delta(step.text)
        elif self.call is not None and isinstance(step, MessageFinished):
            self.call.finished(step.text)
            self.ready_call, self.call = self.call, None
        elif isinstance(step, ContentDelta) and self.params.logprobs is not None:
            # A delta's logprobs are those of the tokens that made it (a character may span two).
            logprobs, self.pending_logprobs = self.pending_logprobs, []
            self.builder.apply(step, logprobs=logprobs)
        else:
            self.builder.apply(step)
        if not isinstance(step, ContentDelta):
            self.pending_logprobs = []  # header and end tokens belong to no text

    async def _start_call(self) -> None:
        """Make the server-side tool call that the model has begun (off the loop), and give it
        the steps held meanwhile."""
        if self.starting_call is None:
            return
        recipient, self.starting_call = self.starting_call, None
        self.call = await self.in_tool_thread(self.toolbox.call_for, recipient)
        held, self.held_steps = self.held_steps, []
        for step in held:
            self._route(step)


def _format_constraint(output_format: dict[str, Any]) -> dict[str, Any]:
    if output_format["type"] == "json_schema":
        return {"json_schema": output_format["schema"]}
    return {"json_object": True}
