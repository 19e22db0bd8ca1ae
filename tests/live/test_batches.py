"""The Batch API on the live stack, driven by the openai SDK as a client would: upload,
batch, poll, output and error files, cancel mid-way, expiry, the batch.* webhooks, and
tenants kept apart. The runner's finer points are in tests/batches/test_api.py; the faults
a batch lives through are in tests/faults."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest

from tests.helpers import wait_until
from tests.live.test_health_and_metrics import scrape, value
from tests.live.webhook_receiver import Receiver

pytestmark = pytest.mark.core

BATCH_TYPES = ["batch.completed", "batch.failed", "batch.expired", "batch.cancelled"]
ENDED = {"completed", "failed", "expired", "cancelled"}


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.close()


def upload(client: openai.OpenAI, lines: list[dict[str, Any]]) -> str:
    content = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    return client.files.create(file=("requests.jsonl", content), purpose="batch").id


def line(custom_id: str, text: str, **body: Any) -> dict[str, Any]:
    return {"custom_id": custom_id, "method": "POST", "url": "/v1/responses",
            "body": {"model": "echo", "input": text, **body}}


def ended(client: openai.OpenAI, batch_id: str, timeout: float = 90) -> Any:
    return wait_until(lambda: (batch := client.batches.retrieve(batch_id)).status in ENDED and batch,
                      timeout=timeout, interval=0.3)


def webhook_events(client: openai.OpenAI, receiver: Receiver, secret: str) -> list[Any]:
    return [client.webhooks.unwrap(r.body, r.headers, secret=secret) for r in receiver.received]


def test_a_batch_runs_on_the_live_stack_into_files_and_one_webhook(stack, carol: openai.OpenAI, bob: openai.OpenAI,
                                                                    receiver: Receiver):
    endpoint = carol.webhooks.create(name="batches", url=receiver.url, event_types=[*BATCH_TYPES, "response.completed"])
    lines = [line(f"q{n}", f"Question {n}") for n in range(5)] + [line("bad", "x", previous_response_id="resp_gone")]
    batch = carol.batches.create(input_file_id=upload(carol, lines), endpoint="/v1/responses",
                                 completion_window="24h", metadata={"run": "live"})
    assert batch.status == "validating" and batch.request_counts.total == 0

    done = ended(carol, batch.id)
    assert done.status == "completed" and (done.request_counts.completed, done.request_counts.failed) == (5, 1)
    output = [json.loads(raw) for raw in carol.files.content(done.output_file_id).read().splitlines()]
    assert [entry["custom_id"] for entry in output] == [f"q{n}" for n in range(5)]
    assert output[2]["response"]["body"]["output"][-1]["content"][0]["text"] == "You said: Question 2"
    [error] = [json.loads(raw) for raw in carol.files.content(done.error_file_id).read().splitlines()]
    assert error["custom_id"] == "bad" and error["response"]["status_code"] == 404

    wait_until(lambda: receiver.received, timeout=30)
    # One event for the batch; none for each of its responses.
    [event] = webhook_events(carol, receiver, endpoint.signing_secret)
    assert (event.type, event.data.id, event.created_at) == ("batch.completed", batch.id, done.completed_at)

    # /metrics counts batch requests by state; this batch's are done.
    families = scrape(stack)
    assert value(families, "responses_batch_requests", model="echo", state="completed") >= 5
    assert value(families, "responses_batch_requests", model="echo", state="failed") >= 1
    assert {s.labels["state"] for s in families["responses_batch_requests"].samples} == {
        "queued", "running", "completed", "failed", "cancelled", "expired"}

    with pytest.raises(openai.NotFoundError):
        bob.batches.retrieve(batch.id)
    with pytest.raises(openai.NotFoundError):
        bob.files.content(done.output_file_id)


def test_a_batch_cancelled_mid_way_ends_cancelled_with_its_webhook(carol: openai.OpenAI, receiver: Receiver):
    endpoint = carol.webhooks.create(name="batches", url=receiver.url, event_types=BATCH_TYPES)
    slow = {"metadata": {"echo_token_delay_ms": "40"}}
    batch = carol.batches.create(input_file_id=upload(carol, [line(f"q{n}", f"Question {n}", **slow)
                                                               for n in range(12)]),
                                 endpoint="/v1/responses", completion_window="24h")
    wait_until(lambda: carol.batches.retrieve(batch.id).request_counts.completed >= 1, timeout=60)
    assert carol.batches.cancel(batch.id).status in ("cancelling", "cancelled")
    done = ended(carol, batch.id)
    assert done.status == "cancelled" and 1 <= done.request_counts.completed < 12
    cut = [json.loads(raw) for raw in carol.files.content(done.error_file_id).read().splitlines()]
    assert {entry["error"]["code"] for entry in cut} == {"batch_cancelled"}
    assert len(cut) + done.request_counts.completed == 12
    wait_until(lambda: receiver.received, timeout=30)
    assert [(e.type, e.data.id) for e in webhook_events(carol, receiver, endpoint.signing_secret)] == [
        ("batch.cancelled", batch.id)]


def test_a_batch_past_its_window_is_expired_by_beat(carol: openai.OpenAI, receiver: Receiver, db_access):
    from django.utils import timezone

    from responses_app.models import Batch

    endpoint = carol.webhooks.create(name="batches", url=receiver.url, event_types=BATCH_TYPES)
    slow = {"metadata": {"echo_token_delay_ms": "40"}}
    batch = carol.batches.create(input_file_id=upload(carol, [line(f"q{n}", f"Question {n}", **slow)
                                                               for n in range(12)]),
                                 endpoint="/v1/responses", completion_window="24h")
    wait_until(lambda: carol.batches.retrieve(batch.id).status == "in_progress", timeout=60)
    # The window (BATCH_COMPLETION_WINDOW_S) ends now; beat's tick (every second here) sees it.
    Batch.objects.filter(pk=batch.id).update(expires_at=timezone.now())
    done = ended(carol, batch.id)
    assert done.status == "expired" and done.expired_at >= done.expires_at
    cut = [json.loads(raw) for raw in carol.files.content(done.error_file_id).read().splitlines()]
    assert cut and {entry["error"]["code"] for entry in cut} == {"batch_expired"}
    wait_until(lambda: receiver.received, timeout=30)
    assert [(e.type, e.data.id) for e in webhook_events(carol, receiver, endpoint.signing_secret)] == [
        ("batch.expired", batch.id)]


def test_a_batch_whose_file_does_not_validate_fails_with_its_webhook(carol: openai.OpenAI, receiver: Receiver):
    endpoint = carol.webhooks.create(name="batches", url=receiver.url, event_types=BATCH_TYPES)
    batch = carol.batches.create(input_file_id=upload(carol, [line("a", "x"), line("a", "y")]),
                                 endpoint="/v1/responses", completion_window="24h")
    done = ended(carol, batch.id)
    assert done.status == "failed" and [(e.line, e.code) for e in done.errors.data] == [(2, "duplicate_custom_id")]
    wait_until(lambda: receiver.received, timeout=30)
    assert [e.type for e in webhook_events(carol, receiver, endpoint.signing_secret)] == ["batch.failed"]
