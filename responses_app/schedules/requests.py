"""The body of a schedule's create or update (POST /v1/scheduled_responses[/{id}]), parsed
once into ScheduleFields, with OpenAI's 400s for what is wrong. The request to run is
checked as a create's body by the service (runs.run_request), the schedule by its beat
entry's parser."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from responses_app.schedules.beat_entries import parse_schedule
from responses_app.wire.errors import invalid_type
from responses_app.wire.request_body import body_fields, sent_fields

MAX_NAME = 256
FIELDS = ("name", "schedule", "request", "enabled")
REQUIRED = ("name", "schedule", "request")


@dataclass(frozen=True)
class ScheduleFields:
    """What the body sets; None: not sent (an update keeps the schedule's own)."""

    name: str | None = None
    schedule: dict[str, Any] | None = None  # normalized by beat_entries.parse_schedule
    request: dict[str, Any] | None = None  # the body of a POST /v1/responses
    enabled: bool | None = None

    def columns(self) -> dict[str, Any]:
        """The ScheduledResponse columns it sets."""
        return sent_fields(self)


def parse_schedule_fields(body: Any, *, required: bool) -> ScheduleFields:
    """A create's body (``required``: name, schedule and request) or an update's."""
    sent = body_fields(body, FIELDS, required=REQUIRED if required else ())
    name = sent.get("name")
    if "name" in sent and (not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME):
        raise invalid_type("name", f"a non-empty string of at most {MAX_NAME} characters", name)
    schedule = parse_schedule(sent["schedule"]) if "schedule" in sent else None
    request = sent.get("request")
    if "request" in sent and not isinstance(request, dict):
        raise invalid_type("request", "an object (the body of a POST /v1/responses)", request)
    enabled = sent.get("enabled")
    if "enabled" in sent and not isinstance(enabled, bool):
        raise invalid_type("enabled", "a boolean", enabled)
    return ScheduleFields(name=name, schedule=schedule, request=request, enabled=enabled)
