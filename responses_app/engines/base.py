"""The engine interface: the only thing the worker knows about generation.

An engine turns prompt token ids into a stream of output token ids. One engine lives
in each worker process and is shared by every response that process runs at once, so
everything here is called on the engine host's single asyncio loop.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Protocol

# The user message that ends a compaction turn (POST /v1/responses/compact): a model
# answers it with its own summary of the conversation before it; the echo engine, which
# has no model, with a deterministic digest of that conversation.
SUMMARY_REQUEST = (
    "Summarize the conversation above for your own later use, as it will replace everything but the user's "
    "messages: what was asked and decided, facts learned, tool calls made and their results, and what is still "
    "open. Answer with the summary only."
)


@dataclass(frozen=True)
class SamplingParams:
    max_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    # Chat Completions' seed and vLLM's extensions (models/response_params.ChatOptions); the
    # echo engine, which samples nothing, takes them and changes nothing.
    seed: int | None = None
    top_k: int | None = None
    min_p: float | None = None
    repetition_penalty: float | None = None
    # Log probabilities of each output token and of this many alternatives; None: none.
    logprobs: int | None = None
    # Generation stops right after any of these tokens (harmony's <|return|>, <|call|>).
    stop_token_ids: tuple[int, ...] = ()
    # Engine options that the worker sets (a structured output's grammar); engines
    # ignore the keys they do not know.
    extra: dict = field(default_factory=dict)
    # The prefix cache's salt: a prompt's cached blocks are found only by requests of the
    # same salt (the tenant's), so no tenant's first-token time tells of another's prompts.
    cache_salt: str | None = None
    # The request's metadata: the echo engine reads its test knobs from it.
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class EngineChunk:
    """New output tokens. ``cached_tokens``: prompt tokens served from cache, if known."""

    token_ids: list[int]
    cached_tokens: int | None = None
    # With SamplingParams.logprobs: per token, (its id, its logprob), then the most likely
    # alternatives as (id, logprob), best first.
    logprobs: list[list[tuple[int, float]]] | None = None


class EngineDead(RuntimeError):
    """The engine can no longer generate; every request on it fails, and the host starts
    a new engine for the next request."""


class Engine(Protocol):
    def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, request_id: str
    ) -> AsyncIterator[EngineChunk]:
        """Stream the output for one request; ends after a stop token or max_tokens."""

    async def abort(self, request_id: str) -> None:
        """Stop a running request; its ``generate`` iterator ends soon after."""

    async def start(self) -> None:
        """Load the model (called once, on the host's loop, before the first request)."""

    async def shutdown(self) -> None:
        """Release the engine's resources (called when it died or the worker stops)."""

    def is_dead(self) -> bool:
        """True once the engine can no longer generate."""

    def prefill_backlog_s(self) -> float:
        """Seconds of prefill queued ahead of a request submitted now (0 where not known)."""
