"""A schedule as the API takes it, and as django-celery-beat keeps it.

``{"cron": "*/5 * * * *", "timezone": "Europe/Paris"}`` becomes a CrontabSchedule,
``{"every_seconds": 60}`` an IntervalSchedule, ``{"at": "2026-12-24T18:00:00Z"}`` a
ClockedSchedule with a one-off PeriodicTask. Each ScheduledResponse owns one
PeriodicTask, saved through the ORM so that beat's database scheduler sees the change
(within CELERY_BEAT_MAX_LOOP_INTERVAL).
"""

from __future__ import annotations

import functools
import json
import zoneinfo
from datetime import UTC, datetime, timedelta
from typing import Any

from celery.schedules import crontab
from django.utils import timezone
from django_celery_beat.models import ClockedSchedule, CrontabSchedule, IntervalSchedule, PeriodicTask

from responses_app.wire.errors import InvalidRequest, invalid_type
from responses_app.wire.request_body import is_integer

RUN_SCHEDULED_TASK = "responses_app.tasks.run_scheduled_response"
KINDS = ("cron", "every_seconds", "at")
# IntervalSchedule.every is an integer column; a year is more than any interval needs.
MAX_EVERY_SECONDS = 366 * 24 * 3600


def parse_schedule(value: Any) -> dict[str, Any]:
    """The schedule, checked and normalized; a 400 naming ``schedule.<field>`` otherwise."""
    if not isinstance(value, dict):
        raise invalid_type("schedule", "an object", value)
    kinds = [kind for kind in KINDS if kind in value]
    if len(kinds) != 1:
        raise InvalidRequest("'schedule' must have exactly one of 'cron', 'every_seconds' or 'at'.", param="schedule")
    kind = kinds[0]
    allowed = {"cron": {"cron", "timezone"}, "every_seconds": {"every_seconds"}, "at": {"at"}}[kind]
    for name in value:
        if name not in allowed:
            raise InvalidRequest(f"Unknown parameter: 'schedule.{name}'.", param=f"schedule.{name}",
                                 code="unknown_parameter")
    if kind == "cron":
        fields = _cron(value["cron"])
        return {"cron": " ".join(fields.values()), "timezone": _timezone(value.get("timezone", "UTC"))}
    if kind == "every_seconds":
        every = value["every_seconds"]
        if not is_integer(every) or not 1 <= every <= MAX_EVERY_SECONDS:
            raise InvalidRequest(f"'schedule.every_seconds' must be an integer from 1 to {MAX_EVERY_SECONDS} "
                                 f"(a year), got {every!r}.", param="schedule.every_seconds", code="invalid_value")
        return {"every_seconds": every}
    return {"at": _at(value["at"]).isoformat()}


def save_periodic_task(task: PeriodicTask | None, schedule_id: str, schedule: dict[str, Any],
                       enabled: bool) -> PeriodicTask:
    """Create or update the beat entry of a scheduled response (inside its transaction)."""
    task = task or PeriodicTask(name=f"scheduled response {schedule_id}", task=RUN_SCHEDULED_TASK,
                                args=json.dumps([schedule_id]))
    task.interval = task.crontab = task.clocked = None
    task.one_off = False
    if "cron" in schedule:
        fields = _cron(schedule["cron"])
        task.crontab, _ = CrontabSchedule.objects.get_or_create(timezone=zoneinfo.ZoneInfo(schedule["timezone"]),
                                                                **fields)
    elif "every_seconds" in schedule:
        task.interval, _ = IntervalSchedule.objects.get_or_create(every=schedule["every_seconds"],
                                                                  period=IntervalSchedule.SECONDS)
    else:
        task.clocked, _ = ClockedSchedule.objects.get_or_create(clocked_time=datetime.fromisoformat(schedule["at"]))
        task.one_off = True
    task.enabled = enabled
    # A changed schedule starts afresh (beat measures an interval from the last run).
    task.last_run_at = None
    task.save()
    return task


def next_run_at(task: PeriodicTask | None, last_tick: datetime | None) -> datetime | None:
    """When the schedule runs next (None: it will not), from the tick of its last run:
    beat's own record of its last run reaches the database only now and then."""
    if task is None or not task.enabled:
        return None
    if task.clocked is not None:
        return None if last_tick is not None else task.clocked.clocked_time
    now = timezone.now()
    if task.interval is not None:
        start = last_tick or task.date_changed or now
        return max(now, start + timedelta(seconds=task.interval.every))
    # Cron times are whole minutes; the estimate is off by the microseconds between two clocks.
    at = now + task.schedule.remaining_estimate(now)
    return (at + timedelta(milliseconds=500)).replace(microsecond=0)


def _cron(expression: Any) -> dict[str, str]:
    """The five fields of a cron expression, by the names CrontabSchedule gives them."""
    if not isinstance(expression, str):
        raise invalid_type("schedule.cron", "a string", expression)
    parts = expression.split()
    if len(parts) != 5:
        raise InvalidRequest("'schedule.cron' must have 5 fields: minute hour day-of-month month day-of-week.",
                             param="schedule.cron")
    fields = dict(zip(("minute", "hour", "day_of_month", "month_of_year", "day_of_week"), parts, strict=True))
    try:
        crontab(**fields)
    except (ValueError, TypeError) as error:
        raise InvalidRequest(f"'schedule.cron' is not a valid cron expression: {error}.",
                             param="schedule.cron") from None
    return fields


def _timezone(name: Any) -> str:
    if not isinstance(name, str):
        raise invalid_type("schedule.timezone", "a string", name)
    # Looked up among the known names, never opened as a path: a long or odd name is just unknown.
    if name not in _time_zones():
        raise InvalidRequest(f"Unknown time zone {name[:64]!r}.", param="schedule.timezone")
    return name


@functools.cache
def _time_zones() -> frozenset[str]:
    return frozenset(zoneinfo.available_timezones() | {"UTC"})


def _at(value: Any) -> datetime:
    if not isinstance(value, str):
        raise invalid_type("schedule.at", "an ISO 8601 date and time", value)
    try:
        at = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequest(f"'schedule.at' is not an ISO 8601 date and time: {value!r}.",
                             param="schedule.at") from None
    if at.tzinfo is None:
        raise InvalidRequest("'schedule.at' must have a UTC offset (e.g. 'Z' or '+02:00').", param="schedule.at")
    try:
        # Read back in UTC: a time whose UTC day is past the year 9999 could be stored
        # (PostgreSQL) but never read again.
        at.astimezone(UTC)
    except OverflowError:
        raise InvalidRequest("'schedule.at' is out of range: its UTC time is after the year 9999.",
                             param="schedule.at") from None
    if at <= timezone.now():
        raise InvalidRequest("'schedule.at' is in the past.", param="schedule.at")
    return at
