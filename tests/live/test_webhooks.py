"""Webhooks as the openai SDK manages and verifies them: endpoints through
``client.webhooks``, deliveries of response.* events signed so that
``client.webhooks.unwrap`` accepts them, retried with the same webhook-id, tenant-scoped
and SSRF-guarded."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import openai
import pytest

from tests.conftest import sdk_client
from tests.live.helpers import new_key, new_tenant, wait_for_status, wait_until
from tests.live.webhook_receiver import Receiver

pytestmark = pytest.mark.core

RESPONSE_TYPES = ["response.completed", "response.failed", "response.cancelled", "response.incomplete"]
SLOW_METADATA = {"echo_token_delay_ms": "50"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def carol(stack, db_access) -> openai.OpenAI:
    """A tenant of this test's own: its endpoints receive only its own events."""
    return sdk_client(stack, new_key(new_tenant("webhooks")))


def deliveries(endpoint_id: str) -> list:
    from responses_app.models import WebhookDelivery

    return list(WebhookDelivery.objects.filter(endpoint_id=endpoint_id).prefetch_related("attempt_log")
                .order_by("created_at"))


def test_endpoints_are_managed_with_the_sdk(carol: openai.OpenAI, receiver: Receiver, bob: openai.OpenAI):
    created = carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    assert created.id and created.object == "webhook_endpoint"
    assert created.signing_secret.startswith("whsec_")
    assert created.signing_secret_hint.endswith(created.signing_secret[-4:])
    assert created.updated_at == created.created_at

    fetched = carol.webhooks.retrieve(created.id)
    assert (fetched.name, fetched.url, fetched.event_types) == ("ops", receiver.url, ["response.completed"])
    assert "signing_secret" not in fetched.model_dump()

    updated = carol.webhooks.update(created.id, name="ops-2", event_types=RESPONSE_TYPES)
    assert (updated.name, updated.event_types) == ("ops-2", RESPONSE_TYPES)
    unchanged = carol.webhooks.update(created.id, name="ops-2")
    assert unchanged.updated_at == updated.updated_at

    second = carol.webhooks.create(name="second", url=receiver.url, event_types=["response.failed"])
    listed = carol.webhooks.list(limit=1)
    assert [endpoint.id for endpoint in listed.data] == [second.id] and listed.has_more
    assert [endpoint.id for endpoint in carol.webhooks.list(limit=1, after=second.id).data] == [created.id]

    assert carol.webhooks.event_types.list().data == RESPONSE_TYPES

    rotated = carol.webhooks.rotate_secret(created.id)
    assert rotated.signing_secret.startswith("whsec_") and rotated.signing_secret != created.signing_secret

    # Another tenant's ids are not found, for every method.
    for call in (lambda: bob.webhooks.retrieve(created.id), lambda: bob.webhooks.delete(created.id),
                 lambda: bob.webhooks.update(created.id, name="x"), lambda: bob.webhooks.rotate_secret(created.id)):
        with pytest.raises(openai.NotFoundError):
            call()
    assert created.id not in [endpoint.id for endpoint in bob.webhooks.list().data]

    deleted = carol.webhooks.delete(created.id)
    assert (deleted.id, deleted.deleted, deleted.object) == (created.id, True, "webhook_endpoint.deleted")
    with pytest.raises(openai.NotFoundError):
        carol.webhooks.retrieve(created.id)


def test_bad_endpoints_are_refused_with_a_400(carol: openai.OpenAI, receiver: Receiver):
    cases = [
        ({"url": "http://10.1.2.3/hook"}, "url"),
        ({"url": "http://169.254.169.254/latest/meta-data"}, "url"),
        ({"url": "http://[::1]:8080/hook"}, "url"),
        ({"url": "file:///etc/passwd"}, "url"),
        ({"event_types": ["batch.completed"]}, "event_types[0]"),
        ({"event_types": []}, "event_types"),
        ({"name": ""}, "name"),
    ]
    for change, param in cases:
        body = {"name": "x", "url": receiver.url, "event_types": ["response.completed"], **change}
        with pytest.raises(openai.BadRequestError) as raised:
            carol.webhooks.create(**body)
        assert raised.value.param == param, change
    assert carol.webhooks.list().data == []


def test_read_only_keys_may_list_but_not_write(stack, db_access, receiver: Receiver):
    tenant = new_tenant("webhooks")
    reader = sdk_client(stack, new_key(tenant, scope="read_only"))
    writer = sdk_client(stack, new_key(tenant))
    endpoint = writer.webhooks.create(name="x", url=receiver.url, event_types=["response.completed"])
    assert [e.id for e in reader.webhooks.list().data] == [endpoint.id]
    for call in (lambda: reader.webhooks.create(name="y", url=receiver.url, event_types=["response.completed"]),
                 lambda: reader.webhooks.delete(endpoint.id), lambda: reader.webhooks.rotate_secret(endpoint.id),
                 lambda: reader.webhooks.test(endpoint.id, event_type="response.completed")):
        with pytest.raises(openai.PermissionDeniedError):
            call()


def test_a_completed_background_response_is_delivered_signed_and_retried_with_the_same_id(
        carol: openai.OpenAI, receiver: Receiver, db_access):
    receiver.statuses = [500]
    endpoint = carol.webhooks.create(name="ops", url=receiver.url, event_types=RESPONSE_TYPES)
    response = carol.responses.create(model="echo", input="Hello webhooks", background=True)
    wait_for_status(carol, response.id, {"completed"})

    wait_until(lambda: len(receiver.received) >= 2, timeout=30)
    first, second = receiver.received[:2]
    assert first.headers["webhook-id"] == second.headers["webhook-id"]
    assert first.body == second.body
    assert 0.4 <= second.at - first.at <= 10  # a retry after backoff (base 1 s here), not at once

    event = carol.webhooks.unwrap(second.body, second.headers, secret=endpoint.signing_secret)
    assert (event.type, event.object, event.data.id) == ("response.completed", "event", response.id)
    assert event.id == second.headers["webhook-id"]
    assert event.created_at == carol.responses.retrieve(response.id).completed_at

    tampered = json.loads(second.body)
    tampered["data"]["id"] = "resp_someone_else"
    with pytest.raises(openai.InvalidWebhookSignatureError):
        carol.webhooks.unwrap(json.dumps(tampered), second.headers, secret=endpoint.signing_secret)
    with pytest.raises(openai.InvalidWebhookSignatureError):
        carol.webhooks.unwrap(second.body, second.headers, secret=carol.webhooks.rotate_secret(endpoint.id)
                              .signing_secret)

    [delivery] = wait_until(lambda: [d for d in deliveries(endpoint.id) if d.status == "delivered"], timeout=10)
    assert [attempt.status_code for attempt in delivery.attempt_log.all()] == [500, 200]
    assert all(attempt.latency_ms >= 0 for attempt in delivery.attempt_log.all())


def test_every_terminal_status_notifies_and_foreground_responses_do_not(carol: openai.OpenAI, receiver: Receiver):
    carol.webhooks.create(name="ops", url=receiver.url, event_types=RESPONSE_TYPES)
    foreground = carol.responses.create(model="echo", input="Not notified")
    cancelled = carol.responses.create(model="echo", input="Slow " * 100, background=True, metadata=SLOW_METADATA)
    wait_for_status(carol, cancelled.id, {"in_progress"})
    carol.responses.cancel(cancelled.id)
    incomplete = carol.responses.create(model="echo", input="Cut short " * 20, background=True, max_output_tokens=16)
    wait_for_status(carol, incomplete.id, {"incomplete"})

    def events() -> dict[str, str]:
        return {json.loads(r.body)["data"]["id"]: json.loads(r.body)["type"] for r in receiver.received}

    wait_until(lambda: len(events()) >= 2, timeout=20)
    assert events() == {cancelled.id: "response.cancelled", incomplete.id: "response.incomplete"}
    assert foreground.id not in events()


def test_endpoints_receive_only_their_event_types_and_their_tenants_responses(
        carol: openai.OpenAI, bob: openai.OpenAI, receiver: Receiver, db_access):
    failures_only = Receiver()
    try:
        carol.webhooks.create(name="all", url=receiver.url, event_types=["response.completed"])
        carol.webhooks.create(name="failures", url=failures_only.url, event_types=["response.failed"])
        mine = carol.responses.create(model="echo", input="mine", background=True)
        theirs = bob.responses.create(model="echo", input="theirs", background=True)
        wait_for_status(carol, mine.id, {"completed"})
        wait_for_status(bob, theirs.id, {"completed"})
        wait_until(lambda: receiver.received, timeout=20)
        assert [json.loads(r.body)["data"]["id"] for r in receiver.received] == [mine.id]
        assert failures_only.received == []
    finally:
        failures_only.close()


def test_a_dead_receiver_delays_neither_the_response_nor_another_tenants_delivery(
        stack, carol: openai.OpenAI, receiver: Receiver, db_access):
    from django.conf import settings

    hanging = Receiver(delay_s=30)  # longer than the attempt timeout (3 s here)
    try:
        other = sdk_client(stack, new_key(new_tenant("webhooks")))
        other.webhooks.create(name="dead", url=hanging.url, event_types=["response.completed"])
        carol.webhooks.create(name="ok", url=receiver.url, event_types=["response.completed"])
        theirs = [other.responses.create(model="echo", input=f"theirs {n}", background=True) for n in range(20)]
        for response in theirs:
            wait_for_status(other, response.id, {"completed"}, timeout=20)
        wait_until(lambda: len(hanging.received) >= 4, timeout=20)  # their attempts are now hanging
        mine = carol.responses.create(model="echo", input="mine", background=True)
        finished = wait_for_status(carol, mine.id, {"completed"}, timeout=10)
        wait_until(lambda: receiver.received, timeout=5)
        assert json.loads(receiver.received[0].body)["data"]["id"] == finished.id
        # Their backlog of 20 waits its turn in the database, not in the queue ahead of
        # others: attempts go on (each ends at the 3 s timeout), never more than a share at once.
        wait_until(lambda: len(hanging.received) >= 12, timeout=30)
        assert hanging.max_open == settings.WEBHOOK_MAX_QUEUED_PER_ENDPOINT
    finally:
        hanging.close()


def test_a_scheduled_run_notifies_like_any_background_response(carol: openai.OpenAI, receiver: Receiver):
    carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    schedule = carol.post("/scheduled_responses", cast_to=httpx.Response, body={
        "name": "notify", "schedule": {"every_seconds": 2}, "request": {"model": "echo", "input": "Run"}}).json()
    try:
        wait_until(lambda: receiver.received, timeout=20)
        event = json.loads(receiver.received[0].body)
        run = carol.responses.retrieve(event["data"]["id"])
        assert run.metadata["scheduled_response_id"] == schedule["id"] and run.status == "completed"
    finally:
        carol.delete(f"/scheduled_responses/{schedule['id']}", cast_to=httpx.Response)


def test_a_test_event_reports_the_receivers_status_code(carol: openai.OpenAI, receiver: Receiver):
    endpoint = carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    receiver.statuses = [404]
    result = carol.webhooks.test(endpoint.id, event_type="response.failed")
    assert (result.status_code, result.success, result.event_type) == (404, True, "response.failed")
    assert result.webhook_endpoint_id == endpoint.id
    event = carol.webhooks.unwrap(receiver.received[0].body, receiver.received[0].headers,
                                  secret=endpoint.signing_secret)
    assert event.type == "response.failed"
    with pytest.raises(openai.BadRequestError):
        carol.webhooks.test(endpoint.id, event_type="batch.completed")


def test_a_rotation_that_keeps_the_old_secret_signs_with_both(carol: openai.OpenAI, receiver: Receiver):
    endpoint = carol.webhooks.create(name="ops", url=receiver.url, event_types=["response.completed"])
    rotated = carol.webhooks.rotate_secret(endpoint.id, keep_old_secret_active_for_24_hours=True)
    carol.webhooks.test(endpoint.id, event_type="response.completed")
    [received] = receiver.received
    for secret in (endpoint.signing_secret, rotated.signing_secret):
        assert carol.webhooks.unwrap(received.body, received.headers, secret=secret).type == "response.completed"
    carol.webhooks.rotate_secret(endpoint.id)  # without keeping: the old one stops at once
    carol.webhooks.test(endpoint.id, event_type="response.completed")
    with pytest.raises(openai.InvalidWebhookSignatureError):
        carol.webhooks.unwrap(receiver.received[1].body, receiver.received[1].headers,
                              secret=rotated.signing_secret)
