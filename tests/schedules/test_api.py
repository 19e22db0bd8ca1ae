"""Scheduled responses as a client manages them (POST/GET/DELETE /v1/scheduled_responses):
stored with their time zone, refused with a 400 that saves nothing, tenant-scoped, against
the API in this process. How beat runs them is tests/live/test_scheduled_responses.py."""

from __future__ import annotations

import httpx
import openai
import pytest
from django.utils import timezone

from tests.conftest import sdk_client
from tests.helpers import ExtensionApi, new_key

pytestmark = pytest.mark.core

REQUEST = {"model": "echo", "input": "Write the daily digest.", "metadata": {"team": "ops"}}


def test_cron_schedules_are_stored_with_their_time_zone(carol: openai.OpenAI):
    api = ExtensionApi(carol)
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
def test_bad_schedules_are_refused_with_a_400_and_nothing_saved(carol: openai.OpenAI, carol_tenant: str, body, param):
    from django_celery_beat.models import PeriodicTask

    from responses_app.models import ScheduledResponse

    tasks = PeriodicTask.objects.count()
    full = {"name": "bad", "schedule": {"every_seconds": 60}, "request": REQUEST, **body}
    full = {key: value for key, value in full.items() if value is not None}
    with pytest.raises(openai.BadRequestError) as raised:
        carol.post("/scheduled_responses", body=full, cast_to=httpx.Response)
    assert raised.value.param == param
    assert not ScheduledResponse.objects.filter(tenant__name=carol_tenant).exists()
    assert PeriodicTask.objects.count() == tasks


def test_schedules_are_tenant_scoped_and_need_a_writing_key(stack, carol: openai.OpenAI, carol_tenant: str,
                                                           bob: openai.OpenAI):
    schedule = ExtensionApi(carol).post("/scheduled_responses", {"name": "mine", "schedule": {"every_seconds": 3600},
                                                        "request": REQUEST})
    path = f"/scheduled_responses/{schedule['id']}"
    for call in (lambda: bob.get(path, cast_to=httpx.Response), lambda: bob.delete(path, cast_to=httpx.Response),
                 lambda: bob.post(path, body={"enabled": False}, cast_to=httpx.Response),
                 lambda: bob.get(f"{path}/runs", cast_to=httpx.Response)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert schedule["id"] not in [s["id"] for s in ExtensionApi(bob).get("/scheduled_responses")["data"]]
    reader = sdk_client(stack, new_key(carol_tenant, scope="read_only"))
    assert [s["id"] for s in ExtensionApi(reader).get("/scheduled_responses")["data"]] == [schedule["id"]]
    with pytest.raises(openai.PermissionDeniedError):
        reader.post(path, body={"enabled": False}, cast_to=httpx.Response)
