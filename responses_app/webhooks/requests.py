"""The bodies of the webhook endpoints' operations, parsed once with OpenAI's 400s: a
create's or an update's fields (EndpointFields), a secret rotation's choice and a test's
event type. A URL must pass the same SSRF guard as the tools' URLs
(TOOLS_ALLOWED_PRIVATE_HOSTS lists the private hosts that may be reached)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.webhooks.outbox import EVENT_TYPES
from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.request_body import body_fields, json_object, sent_fields
from tools_app.url_guard import UrlRefused, check_url

MAX_NAME = 256
MAX_URL = 2048
FIELDS = ("name", "url", "event_types")


@dataclass(frozen=True)
class EndpointFields:
    """What the body sets; None: not sent (an update keeps the endpoint's own)."""

    name: str | None = None
    url: str | None = None
    event_types: list[str] | None = None  # each once, in the order sent

    def columns(self) -> dict[str, Any]:
        """The WebhookEndpoint columns it sets."""
        return sent_fields(self)


def parse_endpoint_fields(body: Any, *, required: bool) -> EndpointFields:
    """A create's body (``required``: all three fields) or an update's."""
    sent = body_fields(body, FIELDS, required=FIELDS if required else ())
    if "name" in sent:
        _string(sent["name"], "name", MAX_NAME)
    if "url" in sent:
        _string(sent["url"], "url", MAX_URL)
        try:
            check_url(sent["url"])
        except UrlRefused as refused:
            raise InvalidRequest(f"The webhook URL is not allowed: {refused.message}.", param="url",
                                 code="invalid_url") from None
    event_types = _event_types(sent["event_types"]) if "event_types" in sent else None
    return EndpointFields(name=sent.get("name"), url=sent.get("url"), event_types=event_types)


def parse_keep_old_secret(body: Any) -> bool:
    """A rotation's ``keep_old_secret_active_for_24_hours`` (false when not sent)."""
    keep = json_object(body or {}).get("keep_old_secret_active_for_24_hours", False)
    if not isinstance(keep, bool):
        raise invalid_type("keep_old_secret_active_for_24_hours", "a boolean", keep)
    return keep


def parse_test_event_type(body: Any) -> str:
    """The event type a test sends."""
    event_type = json_object(body).get("event_type")
    if event_type not in EVENT_TYPES:
        raise InvalidRequest(f"'event_type' must be one of {', '.join(EVENT_TYPES)}.", param="event_type")
    return str(event_type)


def _string(value: Any, name: str, max_length: int) -> None:
    if not isinstance(value, str) or not value.strip():
        raise invalid_type(name, "a non-empty string", value)
    if len(value) > max_length:
        raise InvalidRequest(f"'{name}' is longer than {max_length} characters.", param=name,
                             code="string_above_max_length")


def _event_types(value: Any) -> list[str]:
    if not isinstance(value, list) or not value:
        raise invalid_type("event_types", "a non-empty array of event types", value)
    for index, event_type in enumerate(value):
        if event_type not in EVENT_TYPES:
            raise InvalidRequest(f"Event type {event_type!r} is not sent by this server; it sends "
                                 f"{', '.join(EVENT_TYPES)}.", param=f"event_types[{index}]")
    return list(dict.fromkeys(value))
