"""A create's sampling parameters as the engine takes them."""

from __future__ import annotations

from typing import Any

from responses_app.engines.base import SamplingParams
from responses_app.harmony.encoding import stop_token_ids
from responses_app.models.response_params import ResponseParams
from responses_app.wire.request_body import LOGPROBS_INCLUDE


def sampling_params(params: ResponseParams) -> SamplingParams:
    """The engine's parameters for the response's own turns."""
    return SamplingParams(
        max_tokens=params.max_output_tokens,
        temperature=params.temperature,
        top_p=params.top_p,
        presence_penalty=params.presence_penalty,
        frequency_penalty=params.frequency_penalty,
        logprobs=params.top_logprobs if LOGPROBS_INCLUDE in params.include else None,
        stop_token_ids=stop_token_ids(),
        metadata=params.metadata,
    )


def format_constraint(output_format: dict[str, Any]) -> dict[str, Any]:
    """The engine's constraint for structured outputs (``text.format``)."""
    if output_format["type"] == "json_schema":
        return {"json_schema": output_format["schema"]}
    return {"json_object": True}
