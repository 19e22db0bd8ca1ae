"""The body of POST /v1/batches (client.batches.create)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.batches.endpoints import ENDPOINTS
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.metadata import parse_metadata
from responses_app.wire.request_body import body_fields, is_integer

COMPLETION_WINDOWS = ("24h",)
MIN_OUTPUT_EXPIRY_S = 3600
MAX_OUTPUT_EXPIRY_S = 30 * 86400


@dataclass
class BatchCreate:
    endpoint: str
    input_file_id: str
    metadata: dict[str, str] | None
    output_expires_after_s: int | None


def parse_batch_create(body: Any) -> BatchCreate:
    fields = body_fields(body, ("input_file_id", "endpoint", "completion_window", "metadata", "output_expires_after"),
                         required=("input_file_id", "endpoint", "completion_window"))
    if fields["endpoint"] not in ENDPOINTS:
        raise InvalidRequest(f"Invalid value for 'endpoint': {fields['endpoint']!r}. This server runs batches of "
                             f"{' and '.join(map(repr, ENDPOINTS))}.", param="endpoint", code="invalid_value")
    if fields["completion_window"] not in COMPLETION_WINDOWS:
        raise InvalidRequest(f"Invalid value for 'completion_window': {fields['completion_window']!r}. Supported "
                             "values are: '24h'.", param="completion_window", code="invalid_value")
    if not isinstance(fields["input_file_id"], str):
        raise invalid_type("input_file_id", "a string", fields["input_file_id"])
    metadata = parse_metadata(fields["metadata"]) if "metadata" in fields else None
    return BatchCreate(endpoint=fields["endpoint"], input_file_id=fields["input_file_id"], metadata=metadata,
                       output_expires_after_s=_output_expiry(fields.get("output_expires_after")))


def _output_expiry(value: Any) -> int | None:
    if value is None:
        return None
    if not isinstance(value, dict) or set(value) - {"anchor", "seconds"}:
        raise invalid_type("output_expires_after", "an object with 'anchor' and 'seconds'", value)
    if value.get("anchor") != "created_at":
        raise InvalidRequest(f"Invalid value for 'output_expires_after.anchor': {value.get('anchor')!r}; the "
                             "supported anchor is 'created_at'.", param="output_expires_after.anchor",
                             code="invalid_value")
    seconds = value.get("seconds")
    if not is_integer(seconds) or not (
            MIN_OUTPUT_EXPIRY_S <= seconds <= MAX_OUTPUT_EXPIRY_S):
        raise InvalidRequest(f"'output_expires_after.seconds' must be an integer from {MIN_OUTPUT_EXPIRY_S} to "
                             f"{MAX_OUTPUT_EXPIRY_S}.", param="output_expires_after.seconds", code="invalid_value")
    return seconds
