"""The rules of the background jobs, at the service layer: a scheduled run happens at
most once per tick, webhook retries back off over more than a day, and a deferred
response waits for the dispatcher."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.test import override_settings
from django.utils import timezone

from responses_app.dispatch import deferred, task_queue
from responses_app.models import DeferredState, Response, RunStatus, ScheduledRun, Tenant
from responses_app.schedules import runs, service
from responses_app.schedules.requests import parse_schedule_fields
from responses_app.services.create import create_response
from responses_app.validation.create import parse_create_request
from responses_app.webhooks.delivery import retry_delay

pytestmark = [pytest.mark.django_db, pytest.mark.core]
REQUEST = {"model": "echo", "input": "Digest"}



def schedule_of(tenant: Tenant, schedule: dict) -> str:
    body = {"name": "s", "schedule": schedule, "request": REQUEST}
    return service.create_schedule(tenant, parse_schedule_fields(body, required=True)).pk


def test_a_cron_tick_runs_once_whoever_fires_it(tenant, django_capture_on_commit_callbacks):
    schedule_id = schedule_of(tenant, {"cron": "*/5 * * * *"})
    tick = datetime(2026, 12, 2, 10, 5, tzinfo=UTC)
    with django_capture_on_commit_callbacks(execute=False):
        first = runs.run_scheduled(schedule_id, now=tick + timedelta(seconds=0.2))
        # A second beat, or a restarted one, firing the same tick a little later.
        assert runs.run_scheduled(schedule_id, now=tick + timedelta(seconds=4)) is None
        assert runs.run_scheduled(schedule_id, now=tick - timedelta(seconds=1)) is None
        following = runs.run_scheduled(schedule_id, now=tick + timedelta(minutes=5, seconds=1))
        manual = runs.run_scheduled(schedule_id, manual=True, now=tick + timedelta(seconds=5))
    assert first.tick == tick and first.status == RunStatus.CREATED
    assert following.tick == tick + timedelta(minutes=5)
    assert manual.manual and manual.status == RunStatus.CREATED
    assert Response.objects.filter(tenant=tenant).count() == 3
    response = first.response
    assert response.background and response.request["metadata"] == {"scheduled_response_id": schedule_id}


def test_an_interval_runs_again_only_after_half_an_interval(tenant, django_capture_on_commit_callbacks):
    schedule_id = schedule_of(tenant, {"every_seconds": 60})
    now = timezone.now()
    with django_capture_on_commit_callbacks(execute=False):
        assert runs.run_scheduled(schedule_id, now=now) is not None
        assert runs.run_scheduled(schedule_id, now=now + timedelta(seconds=29)) is None
        assert runs.run_scheduled(schedule_id, now=now + timedelta(seconds=31)) is not None
    assert ScheduledRun.objects.filter(scheduled_response_id=schedule_id).count() == 2


def test_a_run_whose_request_no_longer_validates_is_skipped(tenant, django_capture_on_commit_callbacks):
    schedule_id = schedule_of(tenant, {"every_seconds": 60})
    with override_settings(MODEL_REGISTRY={"other": {"engine": "echo", "queue": "model.other"}}):
        run = runs.run_scheduled(schedule_id)
    assert (run.status, run.response) == (RunStatus.SKIPPED, None)
    assert "does not exist" in run.reason
    assert not Response.objects.filter(tenant=tenant).exists()


def test_a_disabled_schedule_does_not_run_but_can_be_run_by_hand(tenant, django_capture_on_commit_callbacks):
    schedule_id = schedule_of(tenant, {"every_seconds": 60})
    service.set_enabled(service.get_schedule(tenant, schedule_id), False)
    with django_capture_on_commit_callbacks(execute=False):
        assert runs.run_scheduled(schedule_id) is None
        assert runs.run_scheduled(schedule_id, manual=True).status == RunStatus.CREATED


def test_webhook_retries_start_within_a_minute_and_back_off_over_more_than_a_day():
    assert all(retry_delay(1) <= 60 for _ in range(100))
    assert all(retry_delay(n + 1) >= retry_delay(n) / 2 for n in range(1, 10) for _ in range(10))
    elapsed, attempts = 0.0, 1
    while elapsed + retry_delay(attempts) <= 72 * 3600:  # the default retry window
        elapsed += retry_delay(attempts)
        attempts += 1
    assert elapsed >= 24 * 3600
    assert attempts < 40


def test_a_deferred_response_waits_for_the_dispatcher(tenant, django_capture_on_commit_callbacks, monkeypatch):
    sent: list[tuple[str, int]] = []
    monkeypatch.setattr(task_queue, "send",
                        lambda response, task_id, priority=0, **_: sent.append((response.pk, priority)))
    with django_capture_on_commit_callbacks(execute=True):
        later = create_response(tenant, parse_create_request(
            {**REQUEST, "background": True, "background_options": {"completion_window": "8h"}}))
        sooner = create_response(tenant, parse_create_request(
            {**REQUEST, "background": True, "background_options": {"completion_window": "2h"}}))
    assert sent == []
    assert abs(later.deadline_at - later.created_at - timedelta(hours=8)) < timedelta(seconds=1)
    counts = deferred.dispatch_deferred()
    assert counts == {"released": 2, "promoted": 0}
    assert sent == [(sooner.pk, task_queue.DEFERRED_PRIORITY), (later.pk, task_queue.DEFERRED_PRIORITY)]
    assert Response.objects.get(pk=sooner.pk).deferred_state == DeferredState.RELEASED

    sent.clear()
    assert deferred.dispatch_deferred(now=sooner.deadline_at - timedelta(minutes=29)) == {"released": 0,
                                                                                         "promoted": 1}
    assert sent == [(sooner.pk, task_queue.INTERACTIVE_PRIORITY)]
    assert Response.objects.get(pk=sooner.pk).deferred_state == DeferredState.PROMOTED


def test_a_continuation_runs_in_order_of_creation(tenant, django_capture_on_commit_callbacks, monkeypatch):
    sent: list[str] = []
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: sent.append(response.pk))
    options = {"completion_window": "2h", "continuation_id": "nightly"}
    with django_capture_on_commit_callbacks(execute=True):
        first, second = (create_response(tenant, parse_create_request(
            {**REQUEST, "background": True, "background_options": options})) for _ in range(2))
    deferred.dispatch_deferred()
    deferred.dispatch_deferred()
    assert sent == [first.pk]  # the second waits while the first is queued or running
    Response.objects.filter(pk=first.pk).update(status="completed")
    deferred.dispatch_deferred()
    assert sent == [first.pk, second.pk]
