"""``metadata``, as every object that carries it takes it: at most 16 pairs of strings, keys
of at most 64 characters and values of at most 512."""

from __future__ import annotations

from typing import Any

from responses_app.wire.errors import InvalidRequest, invalid_type

MAX_METADATA_PAIRS = 16
MAX_METADATA_KEY = 64
MAX_METADATA_VALUE = 512


def parse_metadata(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise invalid_type("metadata", "an object", value)
    if len(value) > MAX_METADATA_PAIRS:
        raise InvalidRequest(f"'metadata' can have at most {MAX_METADATA_PAIRS} pairs, got {len(value)}.",
                             param="metadata", code="object_above_max_properties")
    for key, item in value.items():
        if len(key) > MAX_METADATA_KEY:
            raise InvalidRequest(f"Metadata keys can be at most {MAX_METADATA_KEY} characters.", param="metadata")
        if not isinstance(item, str):
            raise invalid_type(f"metadata.{key}", "a string", item)
        if len(item) > MAX_METADATA_VALUE:
            raise InvalidRequest(f"Metadata values can be at most {MAX_METADATA_VALUE} characters.",
                                 param=f"metadata.{key}", code="string_above_max_length")
    return dict(value)
