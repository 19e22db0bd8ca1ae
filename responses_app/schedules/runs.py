"""One run of a scheduled response: the background response it creates, or the record
of why it created none.

Beat sends ``run_scheduled_response`` at each tick. A run happens at most once per tick,
even with two beat processes by mistake or a beat restart that fires a tick again: under
the schedule's row lock, a run is a repeat when a run for the same tick exists (a cron
tick is its minute, rounded to the nearest; a one-off schedule has one tick) or, for an
interval, when the last run is less than half an interval old. The stored request is
validated again (a model or a previous response may be gone), and the run passes the
tenant's quotas like any create: one that would exceed them is skipped with the reason,
never queued past the limit.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.utils import timezone

from responses_app.models import RunStatus, ScheduledResponse, ScheduledRun
from responses_app.services.create import create_response
from responses_app.tenancy import quotas
from responses_app.validation.create import parse_create_request
from responses_app.validation.request import CreateRequest
from responses_app.wire.errors import APIError, InvalidRequest

log = logging.getLogger(__name__)
SCHEDULE_METADATA_KEY = "scheduled_response_id"


def run_request(schedule_id: str, body: dict[str, Any]) -> CreateRequest:
    """The stored body as the create it makes: background, with the schedule's id in its
    metadata. Raises InvalidRequest (param ``request.…``) as POST /v1/responses would."""
    if body.get("stream"):
        raise InvalidRequest("A scheduled response runs in the background: 'stream' must not be true.",
                             param="request.stream")
    if body.get("background") is False:
        raise InvalidRequest("A scheduled response runs in the background: 'background' must not be false.",
                             param="request.background")
    metadata = body.get("metadata")
    if isinstance(metadata, dict):
        metadata = {**metadata, SCHEDULE_METADATA_KEY: schedule_id}
    elif metadata is None:
        metadata = {SCHEDULE_METADATA_KEY: schedule_id}
    try:
        return parse_create_request({**body, "background": True, "metadata": metadata})
    except APIError as error:
        error.param = f"request.{error.param}" if error.param else "request"
        raise


def run_scheduled(schedule_id: str, *, manual: bool = False, now: datetime | None = None) -> ScheduledRun | None:
    """Run the schedule for the tick at ``now``; None when that tick has run already (or the
    schedule is gone or disabled, unless run by hand)."""
    now = now or timezone.now()
    try:
        with transaction.atomic():
            schedule = (ScheduledResponse.objects.select_for_update(of=("self",)).select_related("tenant")
                        .filter(pk=schedule_id).first())
            if schedule is None or (not schedule.enabled and not manual):
                return None
            tick = now if manual else _tick(schedule, now)
            if tick is None:
                return None
            return _run(schedule, tick, manual)
    except IntegrityError:  # the tick's run committed in the meantime (the unique constraint)
        return None


def _tick(schedule: ScheduledResponse, now: datetime) -> datetime | None:
    """The tick ``now`` belongs to, or None if that tick has run already."""
    runs = ScheduledRun.objects.filter(scheduled_response=schedule, manual=False)
    if "every_seconds" in schedule.schedule:
        half = timedelta(seconds=schedule.schedule["every_seconds"] / 2)
        return None if runs.filter(tick__gt=now - half).exists() else now
    if "at" in schedule.schedule:
        tick = datetime.fromisoformat(schedule.schedule["at"])
    else:
        tick = (now + timedelta(seconds=30)).replace(second=0, microsecond=0)
    return None if runs.filter(tick=tick).exists() else tick


def _run(schedule: ScheduledResponse, tick: datetime, manual: bool) -> ScheduledRun:
    run = ScheduledRun(scheduled_response=schedule, tick=tick, manual=manual)
    try:
        request = run_request(schedule.pk, schedule.request)
        quotas.check_requests_per_minute(schedule.tenant)
        with transaction.atomic():
            run.response = create_response(schedule.tenant, request)
        run.status = RunStatus.CREATED
    except APIError as error:
        run.status, run.reason = RunStatus.SKIPPED, error.message[:500]
        log.warning("scheduled response %s: run skipped: %s", schedule.pk, error.message)
    run.save()
    return run
