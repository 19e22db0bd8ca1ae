"""The worker side of one response: claim it, generate, stream events, end it.

Runs in a Celery task thread. The engine runs on the process's engine loop; this
thread parses its tokens one at a time, builds events, and commits them in small
batches under the row's lease, checking the cancel flag at least twice a second.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from contextlib import closing
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from .cancel_watch import cancel_watch
from .conversation import ChainBroken, response_history, response_prompt
from .engines.base import EngineDead, SamplingParams
from .engines.host import engine_host
from .event_store import LeaseLost, save_batch
from .events import EventBuilder
from .harmony.encoding import stop_token_ids
from .harmony.parser import ContentDelta, HarmonyOutputError, MessageFinished, MessageStarted, OutputParser
from .harmony.prompt import PromptError, forced_call_prefix, tool_result_tokens
from .models import Response, ResponseStatus
from .observability import recorder
from .selectors import output_items
from .services import TERMINAL_EVENT
from .tool_calls import Toolbox, ToolCall, ToolLoopFailure, run_in_thread
from .usage import add_to_daily_usage

log = logging.getLogger(__name__)


class CancelRequested(Exception):
    pass


class ResponseFailure(Exception):
    """Ends the response as failed with this message (shown to the client). ``code`` is
    one of the SDK's ResponseError codes (server_error, invalid_prompt, ...)."""

    def __init__(self, message: str, code: str = "server_error") -> None:
        super().__init__(message)
        self.message = message
        self.code = code


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


def claim(response_id: str, owner: str) -> Response | None:
    """Compare-and-set queued -> in_progress; None if cancelled or taken by another worker."""
    now = timezone.now()
    claimed = Response.objects.filter(pk=response_id, status=ResponseStatus.QUEUED, cancel_requested=False).update(
        status=ResponseStatus.IN_PROGRESS,
        lease_owner=owner,
        lease_expires_at=now + timedelta(seconds=settings.LEASE_TTL_S),
        attempts=F("attempts") + 1,
        started_at=Coalesce(F("started_at"), now),
    )
    return Response.objects.select_related("tenant").get(pk=response_id) if claimed else None


@dataclass
class Usage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            # cache_write_tokens: vLLM's prefix cache has no separate write accounting.
            "input_tokens_details": {"cached_tokens": self.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }


@dataclass
class BatchWriter:
    """Commits the builder's events at most EVENT_FLUSH_INTERVAL_S after they appear,
    renews the lease, and raises CancelRequested once the cancel flag is seen."""

    response: Response
    owner: str
    builder: EventBuilder
    last_flush: float = field(default_factory=time.monotonic)
    last_lease: float = field(default_factory=time.monotonic)

    def tick(self) -> None:
        now = time.monotonic()
        cancel = False
        if self.builder.has_pending_events and now - self.last_flush >= settings.EVENT_FLUSH_INTERVAL_S:
            cancel = self.flush()
        elif now - self.last_lease >= settings.LEASE_RENEW_S:
            cancel = self.flush()
        else:
            cancel = cancel_watch().cancel_requested(self.response.pk)
        if cancel:
            raise CancelRequested()

    def flush(self, final_fields: dict[str, Any] | None = None) -> bool:
        events, items = self.builder.drain()
        cancel = save_batch(self.response, self.owner, events, items, final_fields)
        self.last_flush = self.last_lease = time.monotonic()
        return cancel


def run_response(response_id: str) -> None:
    owner = worker_identity()
    response = claim(response_id, owner)
    if response is None:
        log.info("%s: not claimable (cancelled, finished or taken)", response_id)
        return
    claimed_at = time.monotonic()
    builder = EventBuilder(response, next_sequence_number=response.last_sequence_number + 1,
                           output=output_items(response))
    if response.last_sequence_number == 0:
        # Only response.created so far; a retry after a lost worker has announced it already.
        builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    writer = BatchWriter(response, owner, builder)
    usage = Usage()
    with cancel_watch().watching(response_id):
        try:
            status, details = _generate(response, builder, writer, usage)
            error = None
        except CancelRequested:
            status, details, error = ResponseStatus.CANCELLED, None, None
        except LeaseLost:
            log.warning("%s: lease lost; another party ended or removed the response", response_id)
            return
        except ResponseFailure as failure:
            status, details, error = ResponseStatus.FAILED, None, {"code": failure.code, "message": failure.message}
        except Exception:
            log.exception("%s: generation failed", response_id)
            status, details = ResponseStatus.FAILED, None
            error = {"code": "server_error", "message": "The server had an error while generating this response."}
    _finish(response, builder, writer, status, details, error, usage)
    recorder.response_finished(response.model, status, usage.output_tokens, time.monotonic() - claimed_at)


def _finish(
    response: Response,
    builder: EventBuilder,
    writer: BatchWriter,
    status: str,
    incomplete_details: dict | None,
    error: dict | None,
    usage: Usage,
) -> None:
    """Close open items and commit the terminal status with the terminal event."""
    builder.close_open_item()
    final_fields = {
        "status": status,
        "error": error,
        "incomplete_details": incomplete_details,
        "usage": usage.as_dict(),
        "completed_at": timezone.now(),
    }
    for name, value in final_fields.items():
        setattr(response, name, value)
    builder.lifecycle(TERMINAL_EVENT[status], status=status)
    try:
        writer.flush(final_fields)
        add_to_daily_usage(response.tenant_id, final_fields["usage"])  # only once the terminal status is ours
    except LeaseLost:
        log.warning("%s: lease lost before the terminal event", response.pk)


def _generate(
    response: Response, builder: EventBuilder, writer: BatchWriter, usage: Usage
) -> tuple[str, dict | None]:
    """Generate the response's output: engine turns and, between them, the tool calls.
    Returns the terminal status and incomplete_details."""
    try:
        history = response_history(response)
    except ChainBroken as error:
        raise ResponseFailure(str(error), code="invalid_prompt") from error
    writer.flush()  # response.in_progress goes out before the first token
    generation = Generation(response, builder, writer, usage, history)
    try:
        generation.toolbox.prepare()
        prompt = _prompt(response, history, builder.output)
        return generation.run(prompt)
    except ToolLoopFailure as error:
        raise ResponseFailure(str(error), code="server_error") from error
    except HarmonyOutputError as error:
        raise ResponseFailure(f"The model produced output that is not valid harmony: {error}",
                              code="server_error") from error
    except EngineDead as error:
        raise ResponseFailure(f"The model engine stopped while generating this response: {error}",
                              code="server_error") from error
    finally:
        generation.count_usage()


def _prompt(response: Response, history: list[dict[str, Any]], output: list[dict[str, Any]]) -> list[int]:
    try:
        prompt = response_prompt(response, output, items=history)
    except PromptError as error:
        raise ResponseFailure(str(error), code="invalid_prompt") from error
    max_model_len = settings.MODEL_REGISTRY[response.model].get("max_model_len")
    if max_model_len and len(prompt) >= max_model_len:
        raise ResponseFailure(f"The prompt has {len(prompt)} tokens, more than this model's {max_model_len}.",
                              code="invalid_prompt")
    return prompt


@dataclass
class TurnEnd:
    """How one engine turn ended: with a server-side tool call to run, or with the response's end."""

    tokens: list[int]  # the assistant's tokens this turn (a prefilled header included)
    call: ToolCall | None = None
    status: str = ResponseStatus.COMPLETED
    details: dict | None = None


class Generation:
    """The model's output for one response: turns of the engine, each parsed one token at a
    time into the event builder, with the tool loop between them. The prompt of each turn is
    the previous one plus the model's tokens and the tool's message, so vLLM's prefix cache
    holds all but the new tokens."""

    def __init__(self, response: Response, builder: EventBuilder, writer: BatchWriter, usage: Usage,
                 history: list[dict[str, Any]]) -> None:
        self.response = response
        self.builder = builder
        self.writer = writer
        self.usage = usage
        self.parsers: list[OutputParser] = []
        self.tokens: list[int] = []  # this turn's
        self.call: ToolCall | None = None
        self.ready_call: ToolCall | None = None
        request = response.request
        self.budget: int | None = request.get("max_output_tokens")
        self.params = SamplingParams(
            max_tokens=self.budget,
            temperature=request.get("temperature"),
            top_p=request.get("top_p"),
            stop_token_ids=stop_token_ids(),
            extra=_engine_extra(request),
        )
        self.output_format: dict[str, Any] = (request.get("text") or {}).get("format") or {"type": "text"}
        self.toolbox = Toolbox(response, builder, history, flush=self._flush,
                               wait=lambda work: run_in_thread(work, writer.tick))

    def _flush(self) -> None:
        if self.writer.flush():
            raise CancelRequested()

    @property
    def parser(self) -> OutputParser:
        return self.parsers[-1]

    def run(self, prompt: list[int]) -> tuple[str, dict | None]:
        request = self.response.request
        prefill = forced_call_prefix(request.get("tool_choice", "auto"), request.get("tools", []))
        base_id = f"{self.response.pk}:{self.response.attempts}"
        for turn in range(settings.MAX_TOOL_TURNS):
            end = self._turn(prompt, prefill, base_id if turn == 0 else f"{base_id}:turn{turn}")
            prefill = []
            if end.call is None:
                return end.status, end.details
            result = end.call.execute()
            if result is None:
                return ResponseStatus.COMPLETED, None  # waits for the client's approval
            prompt = prompt + end.tokens + tool_result_tokens(result.author, result.text, result.channel)
            self.writer.tick()
        raise ResponseFailure(f"The model was still calling tools after {settings.MAX_TOOL_TURNS} turns.")

    def count_usage(self) -> None:
        self.usage.output_tokens = sum(parser.output_tokens for parser in self.parsers)
        self.usage.reasoning_tokens = sum(parser.reasoning_tokens for parser in self.parsers)

    def _remaining(self) -> int | None:
        if self.budget is None:
            return None
        return max(self.budget - sum(parser.output_tokens for parser in self.parsers), 0)

    def _turn(self, prompt: list[int], prefill: list[int], request_id: str) -> TurnEnd:
        self.parsers.append(OutputParser())
        self.tokens = []
        if self._remaining() == 0:  # the earlier turns spent the budget
            return TurnEnd([], status=ResponseStatus.INCOMPLETE, details={"reason": "max_output_tokens"})
        self.tokens = list(prefill)
        for step in self.parser.prefill(prefill):
            self._route(step)
        constrained = self.output_format["type"] != "text"
        # Structured outputs constrain the final answer only, so that reasoning stays free:
        # the first engine call stops where the final message begins, and a second one,
        # under the grammar, continues from there (vLLM's prefix cache holds the start).
        stop = self._engine_call(prompt + self.tokens, self.params, request_id, stop_at_final=constrained)
        if stop == "final" and self._remaining() != 0:
            params = replace(self.params, max_tokens=self._remaining(),
                             extra={**self.params.extra, **_format_constraint(self.output_format)})
            stop = self._engine_call(prompt + self.tokens, params, f"{request_id}:final", stop_at_final=False)
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
        call, self.ready_call = self.ready_call, None
        return TurnEnd(self.tokens, call=call)

    def _engine_call(self, prompt: list[int], params: SamplingParams, request_id: str,
                     stop_at_final: bool) -> str | None:
        """Stream one engine request; why it stopped early ("final", "tool_call") or None."""
        self.usage.input_tokens += len(prompt)
        params = replace(params, max_tokens=self._remaining())
        produced = len(self.tokens)
        try:
            return self._stream(prompt, params, request_id, stop_at_final)
        except EngineDead:
            if len(self.tokens) > produced:
                raise
            # The engine died before this request produced anything (it was submitted in
            # the moment between the death and its discovery): the host has a new engine.
            log.warning("%s: engine died before the first token; retrying on a new engine", request_id)
            return self._stream(prompt, params, f"{request_id}:retry", stop_at_final)

    def _stream(self, prompt: list[int], params: SamplingParams, request_id: str,
                stop_at_final: bool) -> str | None:
        stream = engine_host().stream(self.response.model, prompt, params, request_id=request_id)
        with closing(stream):  # leaving early aborts the engine request
            for chunk in stream:
                if chunk is not None:
                    if chunk.cached_tokens:
                        self.usage.cached_tokens += chunk.cached_tokens
                    for token_id in chunk.token_ids:
                        progress = self._feed(token_id)
                        if self.ready_call is not None:
                            return "tool_call"  # a call ended with <|end|> rather than <|call|>
                        if stop_at_final and any(isinstance(step, MessageStarted) and step.channel == "final"
                                                 for step in progress):
                            return "final"
                    self.count_usage()
                self.writer.tick()
        return None

    def _feed(self, token_id: int) -> list:
        self.tokens.append(token_id)
        progress = self.parser.feed(token_id)
        for step in progress:
            self._route(step)
        return progress

    def _route(self, step: MessageStarted | ContentDelta | MessageFinished) -> None:
        """Server-side tool calls go to their ToolCall; everything else to the builder."""
        if isinstance(step, MessageStarted) and step.kind == "tool_call":
            self.call = self.toolbox.call_for(step.recipient or "")
        elif self.call is not None and isinstance(step, ContentDelta):
            self.call.delta(step.text)
        elif self.call is not None and isinstance(step, MessageFinished):
            self.call.finished(step.text)
            self.ready_call, self.call = self.call, None
        else:
            self.builder.apply(step)


def _format_constraint(output_format: dict[str, Any]) -> dict[str, Any]:
    if output_format["type"] == "json_schema":
        return {"json_schema": output_format["schema"]}
    return {"json_object": True}


ECHO_KNOBS = ("echo_token_delay_ms", "echo_die_after_tokens")


def _engine_extra(request: dict[str, Any]) -> dict[str, Any]:
    """The echo engine's test knobs, from the request's metadata (numbers as strings)."""
    metadata = request.get("metadata") or {}
    extra: dict[str, Any] = {}
    for name in ECHO_KNOBS:
        try:
            extra[name] = float(metadata[name]) if name in metadata else None
        except ValueError:
            continue
    return {name: value for name, value in extra.items() if value is not None}
