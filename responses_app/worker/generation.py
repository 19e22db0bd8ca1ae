"""The model's output for one response: engine turns, each parsed one token at a time into
the event builder, with the tool loop between them.

Runs on the process's engine loop (engines/host.py), as every response the process runs:
the ORM work and the tool calls go off the loop (worker/off_loop.py). A turn's states are
worker/turn.py's; where each parsed step goes, worker/step_router.py; the summaries and
compactions beside the turns, worker/side_calls.py; the token count, worker/token_account.py.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import replace
from typing import Any, TypeVar

from django.conf import settings

from responses_app.context.history import ChainBroken, PromptTooLong, response_history, response_prompt
from responses_app.engines.base import EngineDead, SamplingParams
from responses_app.engines.host import engine_host
from responses_app.harmony.continuations import (
    assistant_tokens,
    forced_call_prefix,
    open_recipient,
    reopened_item_prefix,
    tool_result_tokens,
)
from responses_app.harmony.messages import PromptError
from responses_app.harmony.parser import HarmonyOutputError, MessageFinished, MessageStarted, OutputParser, ParserEvent
from responses_app.lib.db_outage import read_on_a_live_connection
from responses_app.models import Response, ResponseStatus
from responses_app.stream.builder import MESSAGE_ITEM_TYPES, EventBuilder
from responses_app.stream.resume import ResumePoint
from responses_app.wire.usage import Usage
from responses_app.worker.batch_writer import BatchWriter
from responses_app.worker.cancel_watch import cancel_watch
from responses_app.worker.continuation import ended_with, has_called, open_item_action
from responses_app.worker.off_loop import OffLoop
from responses_app.worker.sampling import format_constraint, sampling_params
from responses_app.worker.side_calls import SideCalls
from responses_app.worker.step_router import StepRouter
from responses_app.worker.token_account import TokenAccount
from responses_app.worker.tools import registry
from responses_app.worker.tools.base import ToolCall, ToolLoopFailure, run_in_thread
from responses_app.worker.tools.refused_calls import RefusedCall
from responses_app.worker.tools.toolbox import Toolbox
from responses_app.worker.turn import EarlyStop, ResponseFailure, TurnEnd

log = logging.getLogger(__name__)
T = TypeVar("T")

# Items whose harmony message is on the analysis channel: its tokens are reasoning tokens.
ANALYSIS_ITEM_TYPES = frozenset({"reasoning", "code_interpreter_call", "web_search_call", "file_search_call"})


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
        if response.params.compaction_trigger:
            await generation.side_calls.compact_on_trigger(history)
            return ResponseStatus.COMPLETED, None
        reopened = await generation.resume(resumed) if resumed is not None and resumed.output else None
        if reopened is None and resumed is not None and (end := ended_with(builder.output)) is not None:
            return end  # the lost worker had written all of it
        if registry.preparing(generation.toolbox):
            await generation.in_tool_thread(registry.prepare, generation.toolbox)
        # A reopened item is written again by the model, after the output before it.
        before = builder.output if reopened is None else builder.output[:-1]
        prompt = await off_loop.database(_prompt, response, history, before)
        if reopened is None and _compaction_due(response, len(prompt), builder.output):
            await generation.side_calls.compact(history)
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
        generation.account.count(usage)


def _compaction_due(response: Response, prompt_tokens: int, output: list[dict[str, Any]]) -> bool:
    """context_management: the prompt has passed its compaction threshold (by default 80%
    of the model's context), and this response has not compacted it yet (a retry after a
    lost worker finds its compaction item in its output)."""
    entries = response.params.context_management
    if not entries or any(item["type"] == "compaction" for item in output):
        return False
    threshold = entries[0].compact_threshold
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
        self.request = request = response.params
        self.account = TokenAccount(budget=request.max_output_tokens)
        self.tokens: list[int] = []  # this turn's
        self.params = sampling_params(response)
        constrains = settings.MODEL_REGISTRY[response.model]["engine"] == "vllm"
        self.output_format = request.text.format
        # The toolbox runs in a tool thread (in_tool_thread): it commits and ticks through the loop.
        self.toolbox = Toolbox(response, builder, history, flush=writer.flush_or_cancel_from_thread,
                               wait=lambda work: run_in_thread(work, writer.tick_from_thread))
        self.router = StepRouter(request, builder, history, start=self._start_call,
                                 logprobs=self.params.logprobs is not None, constrains=constrains)
        if self.router.allowed_calls is not None and constrains:
            # vLLM holds the model to the allowed recipients; the router's check stays.
            self.params = replace(self.params, extra={**self.params.extra,
                                                      "structural_tag": self.router.allowed_calls.structural_tag()})
        self.side_calls = SideCalls(response, builder, writer, usage, self.account)

    async def in_tool_thread(self, function: Callable[..., T], *args: Any) -> T:
        """Run the response's own code (a tool call, with its items and events) in a tool
        thread; meanwhile its builder is that thread's (the writer is lent to it)."""
        self.writer.lent = True
        try:
            return await self.off_loop.tool(function, *args)
        finally:
            self.writer.lent = False

    async def _start_call(self, recipient: str) -> ToolCall:
        return await self.in_tool_thread(registry.call_for, self.toolbox, recipient)

    @property
    def parser(self) -> OutputParser:
        return self.account.parsers[-1]

    async def run(self, prompt: list[int], reopened: list[int] | None = None) -> tuple[str, dict[str, Any] | None]:
        """``reopened``: the start of the item a lost worker left open, which the first
        turn prefills for the model to go on writing (its events were sent already)."""
        forced = ([] if has_called(self.builder.output)
                  else forced_call_prefix(self.request.tool_choice, self.request.tools))
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

    async def resume(self, point: ResumePoint) -> list[int] | None:
        """Take over the output a lost worker wrote (worker/continuation.py): count what it
        generated, and decide the item it left open. Returns the prefill that reopens that
        item, for the model to go on writing it; None when nothing is reopened."""
        item = point.open_item
        read_only = item is not None and item["type"] == "mcp_call" and self.toolbox.read_only(item["server_label"],
                                                                                                item["name"])
        action = open_item_action(point, read_only) if item is not None else None
        account = self.account
        # The open item's message counts when it is whole (a call's, a reasoning item's
        # waiting for its summary); a reopened one's start is the prefill's.
        account.prior_output_tokens, account.prior_reasoning_tokens, account.opened_tokens = assistant_tokens(
            point.closed_output if action == "reopen" else point.output,
            continued=item is not None or ended_with(point.output) is None)
        if item is None:
            return None
        if action == "summarize":
            await self.side_calls.summarize()
            return None
        if item["type"] not in MESSAGE_ITEM_TYPES:  # a server-side call: the next of its kind takes it over
            self.toolbox.adopted, self.toolbox.adopted_events = item, point.open_item_events
        if action == "reopen":
            prefill = reopened_item_prefix(item)
            account.prior_output_tokens += len(prefill)
            if item["type"] in ANALYSIS_ITEM_TYPES:  # its message's header is reasoning, its start too
                account.prior_reasoning_tokens += len(prefill) + account.opened_tokens
            account.opened_tokens = 0
            return prefill
        if item["type"] in ("code_interpreter_call", "mcp_call"):
            await self.in_tool_thread(registry.take_over, self.toolbox, action == "rerun")
        return None  # an MCP listing or a compaction is made again where it is made

    async def _turn(self, prompt: list[int], prefill: list[int], request_id: str,
                    reopening: bool = False) -> TurnEnd:
        """One turn's engine calls (worker/turn.py). ``reopening``: the prefill is the start
        of an item whose events were sent."""
        router, account = self.router, self.account
        account.parsers.append(OutputParser(function_namespaces=router.function_namespaces,
                                            call_kinds=router.call_kinds))
        self.parser.carry_header_tokens(account.opened_tokens)  # a continued turn's first message
        account.opened_tokens = 0
        self.tokens = []
        if account.remaining() == 0:  # the earlier turns spent the budget
            return TurnEnd([], status=ResponseStatus.INCOMPLETE, details={"reason": "max_output_tokens"})
        self.tokens = list(prefill)
        router.open_recipient = open_recipient(prefill)
        for step in self.parser.prefill(prefill):
            if reopening and not (isinstance(step, MessageStarted) and step.kind == "tool_call"):
                continue  # the builder holds the item as its events gave it; a tool call takes its item over
            router.route(step)
        await router.start_call()
        constrained = self.output_format.constrained
        # Structured outputs constrain the final answer only, so that reasoning stays free:
        # the first engine call stops where the final message begins, and a second one,
        # under the grammar, continues from there (vLLM's prefix cache holds the start).
        stop = (EarlyStop.GRAMMAR if router.grammar is not None  # a forced custom tool call, prefilled
                else await self._engine_call(prompt + self.tokens, self.params, request_id,
                                             stop_at_final=constrained))
        part = 0
        while stop in (EarlyStop.SUMMARY_DUE, EarlyStop.GRAMMAR):
            # The model goes on where it stopped (vLLM's prefix cache holds the prompt and its
            # tokens so far): after a reasoning item's summary, or, under its grammar, in the
            # input of a custom tool call that it has just begun.
            part += 1
            params = self.params
            if stop is EarlyStop.SUMMARY_DUE:
                await self.side_calls.summarize()
                if cancel_watch().steer_requested(self.response.pk):
                    stop = EarlyStop.STEERED
                    break
            else:
                params = replace(self.params, extra={**self.params.extra, "grammar": router.grammar})
                router.grammar = None
            if account.remaining() == 0:  # the summary spent what was left of the budget
                stop = None
                break
            stop = await self._engine_call(prompt + self.tokens, params, f"{request_id}:part{part}",
                                           stop_at_final=constrained and "grammar" not in params.extra)
        if stop is EarlyStop.STEERED:
            return TurnEnd(self.tokens, status=ResponseStatus.INCOMPLETE, details={"reason": "steered"})
        if stop is EarlyStop.FINAL_ANSWER and account.remaining() != 0:
            params = replace(self.params, max_tokens=account.remaining(),
                             extra={**self.params.extra, **format_constraint(self.output_format)})
            stop = await self._engine_call(prompt + self.tokens, params, f"{request_id}:final", stop_at_final=False)
        if stop is EarlyStop.STOP_SEQUENCE:
            self.builder.finish_open_message()
            return TurnEnd(self.tokens)
        if stop is not EarlyStop.TOOL_CALL and account.remaining() == 0 and self.parser.last_stop_token is None:
            # The budget cut the output off, maybe mid-header: what was open stays incomplete.
            try:
                closing = self.parser.close()
            except HarmonyOutputError:
                closing = []
            if router.call is None:
                router.flush_held()
                for step in closing:
                    if not isinstance(step, MessageFinished):
                        self.builder.apply(step)
            self.builder.close_open_item()
            return TurnEnd(self.tokens, status=ResponseStatus.INCOMPLETE, details={"reason": "max_output_tokens"})
        if stop is not EarlyStop.TOOL_CALL:
            for step in self.parser.close():
                router.route(step)
            if router.stop_reached:  # in the last text: its message ends there
                self.builder.finish_open_message()
            await router.start_call()
            if self.builder.summary_due is not None:  # the output ended right after a reasoning item
                await self.side_calls.summarize()
        return TurnEnd(self.tokens, call=router.take_ready_call())

    async def _engine_call(self, prompt: list[int], params: SamplingParams, request_id: str,
                           stop_at_final: bool) -> EarlyStop | None:
        """Stream one engine request; why it stopped early, or None."""
        self.usage.input_tokens += len(prompt)
        params = replace(params, max_tokens=self.account.remaining())
        produced = len(self.tokens)
        try:
            stop = await self._stream(prompt, params, request_id, stop_at_final)
        except EngineDead:
            if len(self.tokens) > produced:
                raise
            # The engine died before this request produced anything (it was submitted in
            # the moment between the death and its discovery): the host has a new engine.
            log.warning("%s: engine died before the first token; retrying on a new engine", request_id)
            stop = await self._stream(prompt, params, f"{request_id}:retry", stop_at_final)
        self.usage.held_tokens = len(prompt) + len(self.tokens) - produced
        return stop

    async def _stream(self, prompt: list[int], params: SamplingParams, request_id: str,
                      stop_at_final: bool) -> EarlyStop | None:
        router = self.router
        stream = engine_host().stream(self.response.model, prompt, params, request_id=request_id)
        async with aclosing(stream):  # leaving early aborts the engine request
            async for chunk in stream:
                if chunk is not None:
                    if chunk.cached_tokens:
                        self.usage.cached_tokens += chunk.cached_tokens
                    for index, token_id in enumerate(chunk.token_ids):
                        if chunk.logprobs is not None:
                            router.pending_logprobs.append(chunk.logprobs[index])
                        progress = self._feed(token_id)
                        if router.stop_reached:
                            return EarlyStop.STOP_SEQUENCE
                        if router.starting_call is not None:
                            await router.start_call()
                        if router.ready_call is not None:
                            return EarlyStop.TOOL_CALL  # a call ended with <|end|> rather than <|call|>
                        if self.builder.summary_due is not None:
                            return EarlyStop.SUMMARY_DUE
                        if router.grammar is not None:
                            return EarlyStop.GRAMMAR
                        if self._steered_at(progress):
                            return EarlyStop.STEERED
                        if stop_at_final and any(isinstance(step, MessageStarted) and step.channel == "final"
                                                 for step in progress):
                            return EarlyStop.FINAL_ANSWER
                    self.account.count(self.usage)
                await self.writer.tick()
        return None

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
            self.router.route(step)
        return progress
