"""The bodies of the Conversations API (``client.conversations``), with OpenAI's 400s:
items are validated like a create's ``input``, metadata like a create's."""

from __future__ import annotations

from typing import Any

from responses_app.validation.input_items import parse_input
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.metadata import parse_metadata
from responses_app.wire.request_body import body_fields

MAX_ITEMS_PER_REQUEST = 20


def parse_conversation_create(body: Any) -> tuple[dict[str, str], list[dict[str, Any]]]:
    """(metadata, up to 20 initial items); an empty body is an empty conversation."""
    fields = body_fields({} if body is None else body, ("items", "metadata"))
    return parse_metadata(fields.get("metadata")), _items(fields.get("items", []), "items", allow_empty=True)


def parse_conversation_update(body: Any) -> dict[str, str]:
    """The new metadata: required by the SDK, null clears it."""
    body_fields(body, ("metadata",))
    if "metadata" not in body:
        raise InvalidRequest("Missing required parameter: 'metadata'.", param="metadata",
                             code="missing_required_parameter")
    return parse_metadata(body["metadata"])


def parse_items_add(body: Any) -> list[dict[str, Any]]:
    fields = body_fields(body, ("items",), required=("items",))
    return _items(fields["items"], "items", allow_empty=False)


def _items(value: Any, param: str, *, allow_empty: bool) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise invalid_type(param, "an array", value)
    if not value and not allow_empty:
        raise InvalidRequest(f"'{param}' must not be empty.", param=param)
    if len(value) > MAX_ITEMS_PER_REQUEST:
        raise InvalidRequest(f"'{param}' can have at most {MAX_ITEMS_PER_REQUEST} items, got {len(value)}.",
                             param=param, code="array_above_max_length")
    items = parse_input(value, param=param)
    ids = [item["id"] for item in items]
    for index, item_id in enumerate(ids):
        if item_id in ids[:index]:
            raise InvalidRequest(f"Duplicate item id '{item_id}'.", param=f"{param}[{index}].id",
                                 code="duplicate_item")
    return items
