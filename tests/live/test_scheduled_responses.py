"""Scheduled responses: a stored create request that beat's database scheduler runs as
ordinary background responses, at most once per tick, within the tenant's quotas."""

from __future__ import annotations

import signal
import subprocess
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import openai
import pytest
from django.utils import timezone

from tests.conftest import sdk_client
from tests.live.helpers import new_key, new_tenant, wait_for_status, wait_until
from tests.live.stack import LOG_DIR, ROOT, LiveStack

pytestmark = pytest.mark.core

REQUEST = {"model": "echo", "input": "Write the daily digest.", "metadata": {"team": "ops"}}


class Api:
    """The extension endpoints, called as a client would with the SDK's own transport."""

    def __init__(self, client: openai.OpenAI) -> None:
        self.client = client

    def post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return self.client.post(path, body=body, cast_to=httpx.Response).json()

    def get(self, path: str, **query: Any) -> dict[str, Any]:
        return self.client.get(path, options={"params": query}, cast_to=httpx.Response).json()

    def delete(self, path: str) -> dict[str, Any]:
        return self.client.delete(path, cast_to=httpx.Response).json()


@pytest.fixture
def tenant(db_access) -> Iterator[str]:
    """A tenant of the test's own; its schedules are deleted after the test."""
    from responses_app.models import ScheduledResponse
    from responses_app.schedules.service import delete_schedule

    name = new_tenant("schedules")
    yield name
    for schedule in ScheduledResponse.objects.filter(tenant__name=name).select_related("tenant"):
        delete_schedule(schedule.tenant, schedule.pk)


@pytest.fixture
def carol(stack: LiveStack, tenant: str) -> openai.OpenAI:
    return sdk_client(stack, new_key(tenant))


def runs(api: Api, schedule_id: str, **query: Any) -> list[dict[str, Any]]:
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
    api = Api(carol)
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
    api = Api(carol)
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
    api = Api(client)
    schedule = api.post("/scheduled_responses", {"name": "over quota", "schedule": {"every_seconds": 1},
                                                 "request": REQUEST})
    skipped = wait_until(lambda: ScheduledRun.objects.filter(scheduled_response_id=schedule["id"],
                                                             status=RunStatus.SKIPPED).first(), timeout=20)
    assert "Too many background responses" in skipped.reason and skipped.response is None
    client.responses.cancel(busy.id)
    api.delete(f"/scheduled_responses/{schedule['id']}")
    from responses_app.models import Response

    assert Response.objects.filter(tenant__name=tenant).count() == 1 + ScheduledRun.objects.filter(
        scheduled_response__tenant__name=tenant, status=RunStatus.CREATED).count()


def test_a_one_off_schedule_runs_once_at_its_time(carol: openai.OpenAI, db_access):
    api = Api(carol)
    at = timezone.now() + timedelta(seconds=3)
    schedule = api.post("/scheduled_responses", {"name": "once", "schedule": {"at": at.isoformat()},
                                                 "request": REQUEST})
    assert schedule["next_run_at"] == pytest.approx(at.timestamp(), abs=1)
    [run] = wait_until(lambda: runs(api, schedule["id"]), timeout=20)
    assert int(at.timestamp()) <= run["created_at"] <= at.timestamp() + 3
    time.sleep(4)
    assert len(runs(api, schedule["id"])) == 1
    assert api.get(f"/scheduled_responses/{schedule['id']}")["next_run_at"] is None


def test_cron_schedules_are_stored_with_their_time_zone(carol: openai.OpenAI):
    api = Api(carol)
    schedule = api.post("/scheduled_responses", {"name": "nightly", "request": REQUEST,
                                                 "schedule": {"cron": "30 2 * * 1-5", "timezone": "Europe/Paris"}})
    assert schedule["schedule"] == {"cron": "30 2 * * 1-5", "timezone": "Europe/Paris"}
    next_run = timezone.datetime.fromtimestamp(schedule["next_run_at"], tz=timezone.get_fixed_timezone(0))
    local = next_run.astimezone(__import__("zoneinfo").ZoneInfo("Europe/Paris"))
    assert (local.hour, local.minute, local.weekday() < 5) == (2, 30, True)
    updated = api.post(f"/scheduled_responses/{schedule['id']}", {"schedule": {"every_seconds": 3600}})
    assert updated["schedule"] == {"every_seconds": 3600}


@pytest.mark.parametrize(("body", "param"), [
    ({"schedule": {"cron": "* * *"}}, "schedule.cron"),
    ({"schedule": {"cron": "99 * * * *"}}, "schedule.cron"),
    ({"schedule": {"cron": "* * * * *", "timezone": "Mars/Olympus"}}, "schedule.timezone"),
    ({"schedule": {"every_seconds": 0}}, "schedule.every_seconds"),
    ({"schedule": {"at": "2001-01-01T00:00:00Z"}}, "schedule.at"),
    ({"schedule": {"at": "2099-01-01T00:00:00"}}, "schedule.at"),
    ({"schedule": {"every_seconds": 5, "cron": "* * * * *"}}, "schedule"),
    ({"request": {"model": "no-such-model", "input": "x"}}, "request.model"),
    ({"request": {"model": "echo", "input": "x", "stream": True}}, "request.stream"),
    ({"request": {"model": "echo", "input": "x", "temperature": 9}}, "request.temperature"),
    ({"request": {"model": "echo", "input": "x", "metadata": {f"k{n}": "v" for n in range(16)}}}, "request.metadata"),
    ({"name": None}, "name"),
    ({"surprise": 1}, "surprise"),
])
def test_bad_schedules_are_refused_with_a_400_and_nothing_saved(carol: openai.OpenAI, tenant: str, body, param):
    from django_celery_beat.models import PeriodicTask

    from responses_app.models import ScheduledResponse

    tasks = PeriodicTask.objects.count()
    full = {"name": "bad", "schedule": {"every_seconds": 60}, "request": REQUEST, **body}
    full = {key: value for key, value in full.items() if value is not None}
    with pytest.raises(openai.BadRequestError) as raised:
        carol.post("/scheduled_responses", body=full, cast_to=httpx.Response)
    assert raised.value.param == param
    assert not ScheduledResponse.objects.filter(tenant__name=tenant).exists()
    assert PeriodicTask.objects.count() == tasks


def test_schedules_are_tenant_scoped_and_need_a_writing_key(stack: LiveStack, carol: openai.OpenAI, tenant: str,
                                                           bob: openai.OpenAI):
    schedule = Api(carol).post("/scheduled_responses", {"name": "mine", "schedule": {"every_seconds": 3600},
                                                        "request": REQUEST})
    path = f"/scheduled_responses/{schedule['id']}"
    for call in (lambda: bob.get(path, cast_to=httpx.Response), lambda: bob.delete(path, cast_to=httpx.Response),
                 lambda: bob.post(path, body={"enabled": False}, cast_to=httpx.Response),
                 lambda: bob.get(f"{path}/runs", cast_to=httpx.Response)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert schedule["id"] not in [s["id"] for s in Api(bob).get("/scheduled_responses")["data"]]
    reader = sdk_client(stack, new_key(tenant, scope="read_only"))
    assert [s["id"] for s in Api(reader).get("/scheduled_responses")["data"]] == [schedule["id"]]
    with pytest.raises(openai.PermissionDeniedError):
        reader.post(path, body={"enabled": False}, cast_to=httpx.Response)
