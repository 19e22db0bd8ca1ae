"""Scheduled responses of a tenant: create, read, update, delete, and their runs.

A schedule's request is validated as ``POST /v1/responses`` validates a body, when it is
saved (and again at each run: runs.py); its schedule becomes a beat entry
(beat_entries.py) whose enabled flag follows the schedule's.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet

from responses_app.lib.keyset import created_at_page
from responses_app.models import Response, RunStatus, ScheduledResponse, ScheduledRun, Tenant
from responses_app.models.schedules import new_schedule_id
from responses_app.schedules.beat_entries import next_run_at, save_periodic_task
from responses_app.schedules.requests import ScheduleFields
from responses_app.schedules.runs import run_request
from responses_app.selectors import render_response
from responses_app.tenancy.quotas import check_object_count
from responses_app.wire.errors import InvalidRequest, NotFound, or_not_found
from responses_app.wire.objects import list_object


def schedule_object(schedule: ScheduledResponse) -> dict[str, Any]:
    last = schedule.runs.filter(status=RunStatus.CREATED).values_list("created_at", flat=True).first()
    upcoming = next_run(schedule)
    return {
        "id": schedule.pk,
        "object": "scheduled_response",
        "name": schedule.name,
        "schedule": schedule.schedule,
        "request": schedule.request,
        "enabled": schedule.enabled,
        "created_at": int(schedule.created_at.timestamp()),
        "updated_at": int(schedule.updated_at.timestamp()),
        "next_run_at": math.ceil(upcoming.timestamp()) if upcoming else None,
        "last_run_at": int(last.timestamp()) if last else None,
    }


def next_run(schedule: ScheduledResponse) -> datetime | None:
    last_tick = schedule.runs.filter(manual=False).values_list("tick", flat=True).first()
    return next_run_at(schedule.periodic_task, last_tick)


def _schedules(tenant: Tenant) -> QuerySet[ScheduledResponse]:
    # With the beat entry and its schedule, which next_run_at reads.
    return ScheduledResponse.objects.filter(tenant=tenant).select_related(
        "periodic_task__clocked", "periodic_task__interval", "periodic_task__crontab")


def get_schedule(tenant: Tenant, schedule_id: str) -> ScheduledResponse:
    return or_not_found(_schedules(tenant).filter(pk=schedule_id).first(), _missing(schedule_id),
                        "scheduled_response_id")


def _missing(schedule_id: str) -> str:
    return f"Scheduled response with id '{schedule_id}' not found."


def list_page(tenant: Tenant, *, after: str | None, limit: int, order: str) -> dict[str, Any]:
    page, more = created_at_page(
        _schedules(tenant), after=after, limit=limit, order=order,
        missing=lambda cursor, param: NotFound(_missing(cursor), param="scheduled_response_id"))
    return list_object([schedule_object(schedule) for schedule in page], more)


def runs_page(tenant: Tenant, schedule_id: str, *, after: str | None, limit: int) -> dict[str, Any]:
    """The background responses the schedule created, newest first (as Response objects)."""
    schedule = get_schedule(tenant, schedule_id)
    runs, more = created_at_page(
        ScheduledRun.objects.filter(scheduled_response=schedule, response__isnull=False), after=after, limit=limit,
        order="desc", cursor_field="response_id",
        missing=lambda cursor, param: InvalidRequest(f"No run of this schedule created the response '{cursor}'.",
                                                     param=param))
    response_ids = [run.response_id for run in runs]
    responses = Response.objects.in_bulk(response_ids)
    data = [render_response(responses[pk]) for pk in response_ids if pk in responses]
    return list_object(data, more)


def create_schedule(tenant: Tenant, fields: ScheduleFields) -> ScheduledResponse:
    check_object_count(ScheduledResponse.objects.filter(tenant=tenant), settings.TENANT_MAX_SCHEDULES,
                       "schedules", "TENANT_MAX_SCHEDULES")
    schedule = ScheduledResponse(tenant=tenant, id=new_schedule_id(), **fields.columns())
    run_request(schedule.pk, schedule.request)
    with transaction.atomic():
        schedule.periodic_task = save_periodic_task(None, schedule.pk, schedule.schedule, schedule.enabled)
        schedule.save()
    return schedule


def update_schedule(tenant: Tenant, schedule_id: str, fields: ScheduleFields) -> ScheduledResponse:
    with transaction.atomic():
        schedule = get_schedule(tenant, schedule_id)
        schedule_changed = fields.schedule is not None and fields.schedule != schedule.schedule
        for name, value in fields.columns().items():
            setattr(schedule, name, value)
        run_request(schedule.pk, schedule.request)
        if schedule_changed or schedule.periodic_task is None:
            schedule.periodic_task = save_periodic_task(schedule.periodic_task, schedule.pk, schedule.schedule,
                                                        schedule.enabled)
        elif schedule.periodic_task.enabled != schedule.enabled:
            set_enabled(schedule, schedule.enabled)
        schedule.save()
    return schedule


def set_enabled(schedule: ScheduledResponse, enabled: bool) -> None:
    """Enable or disable a schedule and its beat entry (the admin's actions come here too)."""
    with transaction.atomic():
        schedule.enabled = enabled
        schedule.save(update_fields=["enabled", "updated_at"])
        if schedule.periodic_task is not None:
            schedule.periodic_task.enabled = enabled
            schedule.periodic_task.save()  # through save: beat's scheduler watches its signal


def delete_schedule(tenant: Tenant, schedule_id: str) -> None:
    """Delete a schedule and its beat entry; the responses of its runs stay. The row is locked
    first, as a run locks it, so that a run committing meanwhile is collected with the rest."""
    with transaction.atomic():
        get_schedule(tenant, schedule_id)
        schedule = ScheduledResponse.objects.select_for_update().get(pk=schedule_id)
        task = schedule.periodic_task
        schedule.delete()
        if task is not None:
            task.delete()
