"""The webhook endpoints' bodies parsed (webhooks/requests.py): an endpoint's fields, a
rotation's choice and a test's event type, each wrong one a 400 naming it."""

from __future__ import annotations

from typing import Any

import pytest

from responses_app.webhooks.outbox import EVENT_TYPES
from responses_app.webhooks.requests import (
    EndpointFields,
    parse_endpoint_fields,
    parse_keep_old_secret,
    parse_test_event_type,
)
from responses_app.wire.errors import InvalidRequest

pytestmark = pytest.mark.core
URL = "https://8.8.8.8/hooks"  # a public address: no name to resolve
CREATE = {"name": "ops", "url": URL, "event_types": ["response.completed"]}


def test_a_create_sets_its_three_fields_and_each_event_type_once():
    fields = parse_endpoint_fields({**CREATE, "event_types": ["response.completed", "response.failed",
                                                              "response.completed"]}, required=True)
    assert fields == EndpointFields(name="ops", url=URL, event_types=["response.completed", "response.failed"])


def test_an_update_changes_only_what_it_sends():
    assert parse_endpoint_fields({"name": "renamed"}, required=False).columns() == {"name": "renamed"}
    assert parse_endpoint_fields({}, required=False).columns() == {}


@pytest.mark.parametrize(("body", "param", "code"), [
    ({"name": "ops", "url": URL}, "event_types", "missing_required_parameter"),
    ({**CREATE, "name": ""}, "name", "invalid_type"),
    ({**CREATE, "url": "https://8.8.8.8/" + "x" * 2048}, "url", "string_above_max_length"),
    ({**CREATE, "url": "http://127.0.0.1:9/hook"}, "url", "invalid_url"),
    ({**CREATE, "event_types": []}, "event_types", "invalid_type"),
    ({**CREATE, "event_types": ["response.completed", "response.exploded"]}, "event_types[1]", None),
    ({**CREATE, "secret": "s"}, "secret", "unknown_parameter"),
])
def test_a_wrong_field_is_a_400_naming_it(body: dict[str, Any], param: str, code: str | None):
    with pytest.raises(InvalidRequest) as raised:
        parse_endpoint_fields(body, required=True)
    assert (raised.value.param, raised.value.code) == (param, code)


def test_a_rotation_keeps_the_old_secret_only_when_asked():
    assert parse_keep_old_secret(None) is False
    assert parse_keep_old_secret({"keep_old_secret_active_for_24_hours": True}) is True
    with pytest.raises(InvalidRequest) as raised:
        parse_keep_old_secret({"keep_old_secret_active_for_24_hours": "yes"})
    assert raised.value.param == "keep_old_secret_active_for_24_hours"


def test_a_test_sends_one_of_the_event_types_this_server_sends():
    assert parse_test_event_type({"event_type": EVENT_TYPES[0]}) == EVENT_TYPES[0]
    with pytest.raises(InvalidRequest) as raised:
        parse_test_event_type({"event_type": "invoice.paid"})
    assert raised.value.param == "event_type"
