"""Engine calls beside a response's own turns: the summary of a reasoning item
(``reasoning.summary``) and the summary that compacts the context (``context_management``,
an input's ``compaction_trigger``). Their tokens count in the response's usage."""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextlib import aclosing
from dataclasses import replace
from typing import Any

from django.conf import settings
from openai.types.responses import ResponseCompactionCompactingEvent

from responses_app.context import compaction
from responses_app.context.history import PromptTooLong, fit_prompt
from responses_app.engines.base import SamplingParams
from responses_app.engines.host import engine_host
from responses_app.harmony.continuations import reopened_item_prefix
from responses_app.harmony.encoding import stop_token_ids
from responses_app.harmony.messages import PromptError
from responses_app.harmony.parser import ContentDelta, HarmonyOutputError, MessageFinished, MessageStarted, OutputParser
from responses_app.harmony.prompt import summary_prompt
from responses_app.lib.ids import new_id
from responses_app.models import Response
from responses_app.models.response_params import ToolChoice
from responses_app.stream.builder import EventBuilder
from responses_app.wire.usage import Usage
from responses_app.worker.batch_writer import BatchWriter
from responses_app.worker.sampling import cache_salt
from responses_app.worker.token_account import TokenAccount
from responses_app.worker.turn import ResponseFailure

log = logging.getLogger(__name__)
# compaction_trigger: a response.compaction.compacting event per this many characters of summary sampled.
COMPACTING_EVENT_CHARS = 256


class SideCalls:
    def __init__(self, response: Response, builder: EventBuilder, writer: BatchWriter, usage: Usage,
                 account: TokenAccount) -> None:
        self.response = response
        self.builder = builder
        self.writer = writer
        self.usage = usage
        self.account = account
        self.summary_style = response.params.reasoning.summary
        self.summaries = 0

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
        await self.writer.flush_or_cancel()

    async def compact_on_trigger(self, history: list[dict[str, Any]]) -> None:
        """An input that ends with ``compaction_trigger`` (Codex's inline compaction): the
        response's one output item is the ``compaction`` item of the context before it.
        The item is added at once, ``response.compaction.compacting`` events (no content)
        follow as the summary is sampled, and ``response.output_item.done`` carries it sealed."""
        if self.builder.open_item is None:  # else: the item a lost worker opened is summarized again
            if self.builder.output:
                return  # a lost worker finished it
            self.builder.add_item({"id": new_id("cmp"), "type": "compaction", "encrypted_content": ""})
            await self.writer.flush_or_cancel()
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

    async def summarize(self) -> None:
        """reasoning.summary: the served model writes a summary of the reasoning item it has
        just finished, in an engine call of its own, streamed into that item's summary
        before the model goes on."""
        self.summaries += 1
        prompt, cap = summary_prompt(self.builder.summary_due or "", self.summary_style or "auto")
        # A lost worker's summary so far: the model goes on from it.
        written = self.builder.summary_written
        tokens, _ = await self._side_call(prompt, cap, f"summary{self.summaries}", self.builder.summary_delta,
                                          prefill=written)
        self.account.summary_tokens += tokens
        self.account.count(self.usage)
        self.builder.finish_summary()

    async def _compaction_summary(self, context: list[dict[str, Any]],
                                  on_text: Callable[[str], None]) -> str | None:
        """The served model's summary of ``context`` (its tokens count in usage, not against
        max_output_tokens); None when there is none, or it was cut off: such a summary must
        not stand for the context."""
        # As POST /responses/compact's turn: no tools, and the oldest items dropped should
        # the context and the request not fit the model together.
        params = replace(self.response.params, tools=(), tool_choice=ToolChoice(mode="none"),
                         truncation="auto")
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
        self.account.compaction_tokens += tokens
        self.account.count(self.usage)
        summary = "".join(parts).strip()
        if not finished or not summary:
            log.warning("%s: the compaction summary did not finish", self.response.pk)
            return None
        return summary

    async def _side_call(self, prompt: list[int], cap: int, name: str, on_answer: Callable[[str], None],
                         budgeted: bool = True, prefill: str = "") -> tuple[int, bool]:
        """An engine call beside the response's own (a summary): its final answer's text
        goes to ``on_answer`` as it comes (after ``prefill``, the start of the answer
        already written). Returns its output tokens (which count in usage; ``budgeted``:
        also against max_output_tokens) and whether its answer finished."""
        remaining = self.account.remaining() if budgeted else None
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
        params = SamplingParams(max_tokens=max_tokens, stop_token_ids=stop_token_ids(),
                                cache_salt=cache_salt(self.response))
        request_id = f"{self.response.pk}:{self.response.attempts}:{name}"
        stream = engine_host().stream(self.response.model, prompt, params, request_id=request_id)
        try:
            async with aclosing(stream):
                async for chunk in stream:
                    if chunk is not None and chunk.cached_tokens:
                        self.usage.cached_tokens += chunk.cached_tokens  # counted as input_tokens is
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
