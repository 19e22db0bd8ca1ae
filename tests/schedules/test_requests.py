"""A schedule's body parsed into ScheduleFields (schedules/requests.py): what a create must
send, what an update changes, and the 400 that names what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from responses_app.schedules.requests import ScheduleFields, parse_schedule_fields
from responses_app.wire.errors import InvalidRequest

pytestmark = pytest.mark.core
CREATE = {"name": "digest", "schedule": {"every_seconds": 60}, "request": {"model": "echo", "input": "Hi"}}


def test_a_create_sets_every_field_it_sends_and_the_schedule_is_normalized():
    fields = parse_schedule_fields({**CREATE, "schedule": {"cron": "0  9 * * 1-5"}, "enabled": False},
                                   required=True)
    assert fields == ScheduleFields(name="digest", schedule={"cron": "0 9 * * 1-5", "timezone": "UTC"},
                                    request=CREATE["request"], enabled=False)
    assert fields.columns()["enabled"] is False  # false is sent, not "not sent"


def test_an_update_changes_only_what_it_sends():
    fields = parse_schedule_fields({"name": "renamed", "request": None}, required=False)
    assert fields.columns() == {"name": "renamed"}  # a null is not sent, as for OpenAI's updates


@pytest.mark.parametrize(("body", "param"), [
    ({"name": "digest", "schedule": {"every_seconds": 60}}, "request"),
    ({**CREATE, "name": " "}, "name"),
    ({**CREATE, "name": "x" * 257}, "name"),
    ({**CREATE, "schedule": {"every_seconds": 0}}, "schedule.every_seconds"),
    ({**CREATE, "schedule": {"every_seconds": 60, "timezone": "UTC"}}, "schedule.timezone"),
    ({**CREATE, "request": "hello"}, "request"),
    ({**CREATE, "enabled": "yes"}, "enabled"),
    ({**CREATE, "priority": 1}, "priority"),
])
def test_a_create_that_is_wrong_is_a_400_naming_the_field(body: dict[str, Any], param: str):
    with pytest.raises(InvalidRequest) as raised:
        parse_schedule_fields(body, required=True)
    assert raised.value.param == param


def test_the_first_wrong_field_is_named_in_the_bodys_order_of_checks():
    with pytest.raises(InvalidRequest) as raised:
        parse_schedule_fields({"schedule": {"every_seconds": 0}, "request": "hello"}, required=False)
    assert raised.value.param == "schedule.every_seconds"
