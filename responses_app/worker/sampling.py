"""A create's sampling parameters as the engine takes them."""

from __future__ import annotations

from typing import Any

from responses_app.engines.base import SamplingParams
from responses_app.harmony.encoding import stop_token_ids
from responses_app.models import Response
from responses_app.models.response_params import ResponseParams, TextFormat
from responses_app.wire.request_body import LOGPROBS_INCLUDE


def cache_salt(response: Response) -> str:
    """The prefix cache's salt of a response's engine calls: its tenant's own."""
    return f"tenant:{response.tenant_id}"


def sampling_params(response: Response) -> SamplingParams:
    """The engine's parameters for the response's own turns."""
    params: ResponseParams = response.params
    return SamplingParams(
        max_tokens=params.max_output_tokens,
        temperature=params.temperature,
        top_p=params.top_p,
        presence_penalty=params.presence_penalty,
        frequency_penalty=params.frequency_penalty,
        seed=params.chat.seed,
        top_k=params.chat.top_k,
        min_p=params.chat.min_p,
        repetition_penalty=params.chat.repetition_penalty,
        logprobs=params.top_logprobs if LOGPROBS_INCLUDE in params.include else None,
        stop_token_ids=stop_token_ids(),
        cache_salt=cache_salt(response),
        metadata=params.metadata,
    )


def format_constraint(output_format: TextFormat) -> dict[str, Any]:
    """The engine's constraint for structured outputs (``text.format``)."""
    if output_format.type == "json_schema":
        return {"json_schema": output_format.schema}
    return {"json_object": True}
