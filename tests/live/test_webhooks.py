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
from tests.helpers import new_key, new_tenant, wait_for_status, wait_until
from tests.live.webhook_receiver import Receiver

pytestmark = pytest.mark.core

RESPONSE_TYPES = ["response.completed", "response.failed", "response.cancelled", "response.incomplete"]
SLOW_METADATA = {"echo_token_delay_ms": "50"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def deliveries(endpoint_id: str) -> list:
    from responses_app.models import WebhookDelivery

    return list(WebhookDelivery.objects.filter(endpoint_id=endpoint_id).prefetch_related("attempt_log")
                .order_by("created_at"))


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

    hanging = Receiver(delay_s=60)  # longer than the attempt timeout (8 s here)
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
        # others: attempts go on (each ends at the 8 s timeout), never more than a share at once.
        wait_until(lambda: len(hanging.received) >= 12, timeout=60)
        # Several at once, never more than the share (on a loaded machine not all of it overlaps).
        assert 1 < hanging.max_open <= settings.WEBHOOK_MAX_QUEUED_PER_ENDPOINT
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


