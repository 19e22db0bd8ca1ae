"""A create's sampling parameters as the engine takes them."""

from __future__ import annotations

from typing import Any

from responses_app.engines.base import SamplingParams
from responses_app.harmony.encoding import stop_token_ids

LOGPROBS_INCLUDE = "message.output_text.logprobs"


def sampling_params(request: dict[str, Any]) -> SamplingParams:
    """The engine's parameters for the response's own turns."""
    return SamplingParams(
        max_tokens=request.get("max_output_tokens"),
        temperature=request.get("temperature"),
        top_p=request.get("top_p"),
        presence_penalty=request.get("presence_penalty"),
        frequency_penalty=request.get("frequency_penalty"),
        logprobs=request.get("top_logprobs", 0) if LOGPROBS_INCLUDE in (request.get("include") or []) else None,
        stop_token_ids=stop_token_ids(),
        metadata=request.get("metadata") or {},
    )


def format_constraint(output_format: dict[str, Any]) -> dict[str, Any]:
    """The engine's constraint for structured outputs (``text.format``)."""
    if output_format["type"] == "json_schema":
        return {"json_schema": output_format["schema"]}
    return {"json_object": True}
