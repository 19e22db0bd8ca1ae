"""Scheduled responses: a stored create request that beat's database scheduler runs as
ordinary background responses, at most once per tick, within the tenant's quotas."""

from __future__ import annotations

import signal
import subprocess
import time
from datetime import timedelta
from typing import Any

import openai
import pytest
from django.utils import timezone

from tests.conftest import sdk_client
from tests.helpers import ExtensionApi, new_key, new_tenant, wait_for_status, wait_until
from tests.live.stack import LOG_DIR, ROOT, LiveStack

pytestmark = pytest.mark.core

REQUEST = {"model": "echo", "input": "Write the daily digest.", "metadata": {"team": "ops"}}


def runs(api: ExtensionApi, schedule_id: str, **query: Any) -> list[dict[str, Any]]:
    return api.get(f"/scheduled_responses/{schedule_id}/runs", **query)["data"]


def run_rows(schedule_id: str) -> list:
    from responses_app.models import ScheduledRun

    return list(ScheduledRun.objects.filter(scheduled_response_id=schedule_id, manual=False).order_by("created_at"))


def run_gaps(schedule_id: str) -> list[float]:
    rows = run_rows(schedule_id)
    return [(b.created_at - a.created_at).total_seconds() for a, b in zip(rows, rows[1:], strict=False)]


def assert_one_run_per_tick(schedule_id: str, every_s: float) -> None:
    gaps = run_gaps(schedule_id)
    assert all(gap >= every_s / 2 for gap in gaps), gaps


def test_a_recurring_schedule_runs_ordinary_background_responses(carol: openai.OpenAI, db_access):
    api = ExtensionApi(carol)
    schedule = api.post("/scheduled_responses", {"name": "digest", "schedule": {"every_seconds": 2},
                                                 "request": REQUEST})
    assert schedule["object"] == "scheduled_response" and schedule["enabled"] is True
    assert schedule["schedule"] == {"every_seconds": 2} and schedule["request"] == REQUEST
    assert schedule["next_run_at"] is not None and schedule["last_run_at"] is None
    fetched = api.get(f"/scheduled_responses/{schedule['id']}")
    assert {**fetched, "next_run_at": None} == {**schedule, "next_run_at": None}

    listed = wait_until(lambda: (page := runs(api, schedule["id"])) and len(page) >= 3 and page, timeout=30)
    # At the right times: every 2 s (beat looks every second here; a busy worker may lag).
    assert all(1 <= gap <= 4 for gap in run_gaps(schedule["id"])), run_gaps(schedule["id"])
    created = [run["created_at"] for run in listed]
    assert created == sorted(created, reverse=True)  # newest first
    for run in listed:
        assert run["background"] is True
        assert run["metadata"] == {"team": "ops", "scheduled_response_id": schedule["id"]}
        assert wait_for_status(carol, run["id"], {"completed"}).output_text
    first_page = runs(api, schedule["id"], limit=1)
    assert [run["id"] for run in runs(api, schedule["id"], limit=1, after=first_page[0]["id"])] != \
        [first_page[0]["id"]]
    assert api.get(f"/scheduled_responses/{schedule['id']}")["last_run_at"] is not None

    api.post(f"/scheduled_responses/{schedule['id']}", {"enabled": False})
    time.sleep(2)  # a message beat sent before the change may still run
    count = len(run_rows(schedule["id"]))
    time.sleep(5)
    assert len(run_rows(schedule["id"])) == count
    assert_one_run_per_tick(schedule["id"], 2)

    deleted = api.delete(f"/scheduled_responses/{schedule['id']}")
    assert deleted == {"id": schedule["id"], "object": "scheduled_response.deleted", "deleted": True}
    assert carol.responses.retrieve(listed[0]["id"]).status == "completed"  # its runs stay


def test_no_tick_runs_twice_with_two_beats_or_across_a_beat_restart(stack: LiveStack, carol: openai.OpenAI,
                                                                    db_access):
    api = ExtensionApi(carol)
    schedule = api.post("/scheduled_responses", {"name": "twice", "schedule": {"every_seconds": 2},
                                                 "request": REQUEST})
    with open(LOG_DIR / f"beat-2-{stack.port}.log", "ab") as log:  # a second beat, by mistake
        second_beat = subprocess.Popen(stack.commands()["beat"], cwd=ROOT, env=stack.env, stdout=log,
                                       stderr=subprocess.STDOUT, start_new_session=True)
    try:
        time.sleep(9)
    finally:
        second_beat.send_signal(signal.SIGKILL)
        second_beat.wait(timeout=10)
    stack.kill("beat")  # SIGKILL: beat's own record of its last runs may be behind
    stack.start("beat")
    time.sleep(6)
    rows = run_rows(schedule["id"])
    assert len(rows) >= 4
    assert_one_run_per_tick(schedule["id"], 2)
    api.delete(f"/scheduled_responses/{schedule['id']}")


def test_a_run_past_the_tenants_quota_is_skipped_with_the_reason(stack: LiveStack, db_access):
    from responses_app.models import RunStatus, ScheduledRun

    tenant = new_tenant("schedules", max_concurrent_background=1)
    client = sdk_client(stack, new_key(tenant))
    busy = client.responses.create(model="echo", input="Busy " * 200, background=True,
                                   metadata={"echo_token_delay_ms": "50"})
    api = ExtensionApi(client)
    schedule = api.post("/scheduled_responses", {"name": "over quota", "schedule": {"every_seconds": 1},
                                                 "request": REQUEST})
    skipped = wait_until(lambda: ScheduledRun.objects.filter(scheduled_response_id=schedule["id"],
                                                             status=RunStatus.SKIPPED).first(), timeout=20)
    assert "Too many background responses" in skipped.reason and skipped.response is None
    # The schedule goes first: a tick after the busy response's end would pass the quota
    # (and its run would go with the schedule, leaving a response no run accounts for).
    api.delete(f"/scheduled_responses/{schedule['id']}")
    client.responses.cancel(busy.id)
    from responses_app.models import Response

    assert Response.objects.filter(tenant__name=tenant).count() == 1  # every run past the quota made none


def test_a_one_off_schedule_runs_once_at_its_time(carol: openai.OpenAI, db_access):
    api = ExtensionApi(carol)
    at = timezone.now() + timedelta(seconds=3)
    schedule = api.post("/scheduled_responses", {"name": "once", "schedule": {"at": at.isoformat()},
                                                 "request": REQUEST})
    assert schedule["next_run_at"] == pytest.approx(at.timestamp(), abs=1)
    [run] = wait_until(lambda: runs(api, schedule["id"]), timeout=20)
    # Never before its time; after it by beat's tick (1 s here), which a loaded machine delays.
    assert int(at.timestamp()) <= run["created_at"] <= at.timestamp() + 10
    time.sleep(4)
    assert len(runs(api, schedule["id"])) == 1
    assert api.get(f"/scheduled_responses/{schedule['id']}")["next_run_at"] is None


