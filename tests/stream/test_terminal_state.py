"""One function ends a response (services/ended.end_response): on every terminal path the
terminal event's response object equals, field for field, what GET /v1/responses/{id}
answers (selectors.render_response), and the row's state is the one announced.

The worker paths run the real task code in process with the echo engine."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.test import override_settings
from django.utils import timezone

from responses_app import selectors
from responses_app.dispatch import task_queue
from responses_app.harmony.parser import ContentDelta, MessageStarted
from responses_app.models import (
    TERMINAL_EVENTS,
    OutputItem,
    Response,
    ResponseEvent,
    ResponseStatus,
    Tenant,
    TenantDailyUsage,
)
from responses_app.services.cancel import delete_response, request_cancel
from responses_app.services.create import create_response
from responses_app.services.recovery import reap_expired_leases
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import save_batch
from responses_app.tenancy.api_keys import create_api_key
from responses_app.validation.create import parse_create_request
from responses_app.worker.cancel_watch import CancelWatch
from responses_app.worker.claim import claim
from responses_app.worker.run import run_response

pytestmark = [pytest.mark.django_db, pytest.mark.core]

ANSWER = ("<|channel|>analysis<|message|>Thinking it over.<|end|>"
          "<|start|>assistant<|channel|>final<|message|>The answer is 42.<|return|>")
LONG_ANSWER = ("<|channel|>analysis<|message|>" + "a " * 40 + "<|end|>"
               "<|start|>assistant<|channel|>final<|message|>b<|return|>")
MALFORMED = "<|channel|>final<|message|>partial answer<|start|>oops"
SEARCH_FOREVER = ("<|channel|>analysis<|message|>Let me search.<|end|>"
                  '<|start|>assistant to=browser.search<|channel|>analysis code<|message|>{"query": "x"}<|call|>'
                  '<|start|>assistant to=browser.search<|channel|>analysis code<|message|>{"query": "y"}<|call|>')


@pytest.fixture
def tenant() -> Tenant:
    return create_api_key("terminal")[0].tenant


@pytest.fixture(autouse=True)
def no_broker(monkeypatch) -> None:
    """Responses are run here by calling the task code; nothing goes to the broker."""
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: None)


def create(tenant: Tenant, **body: Any) -> Response:
    return create_response(tenant, parse_create_request({"model": "echo", "input": ANSWER, **body}))


def assert_terminal_event_equals_get(response_id: str, status: str) -> dict[str, Any]:
    """The stored terminal event, checked against the row and GET; returns its response."""
    row = Response.objects.get(pk=response_id)
    events = list(ResponseEvent.objects.filter(response=row).order_by("sequence_number"))
    assert [event.sequence_number for event in events] == list(range(row.last_sequence_number + 1))
    terminal = events[-1]
    assert terminal.type == TERMINAL_EVENTS[status]
    assert [event.type for event in events].count(terminal.type) == 1
    announced = terminal.payload["response"]
    assert announced == selectors.render_response(row)
    assert (row.status, announced["status"]) == (status, status)
    assert row.completed_at is not None and announced["completed_at"] == int(row.completed_at.timestamp())
    assert (row.lease_owner, row.lease_expires_at) == ("", None)
    assert all(item.status != "in_progress" for item in OutputItem.objects.filter(response=row))
    return announced


def test_completed(tenant):
    response = create(tenant)
    run_response(response.pk)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.COMPLETED)
    assert announced["usage"]["output_tokens"] > 0 and announced["error"] is None


def test_incomplete_at_max_output_tokens(tenant):
    response = create(tenant, input=LONG_ANSWER, max_output_tokens=16)
    run_response(response.pk)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.INCOMPLETE)
    assert announced["incomplete_details"] == {"reason": "max_output_tokens"}
    assert announced["output"][-1]["status"] == "incomplete"


def test_cancelled_while_queued(tenant):
    response = create(tenant, background=True)
    request_cancel(response)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.CANCELLED)
    assert announced["output"] == [] and announced["usage"] is None


def test_cancelled_while_running_by_its_worker(tenant, monkeypatch):
    # The cancel watch reports the flag from the tenth tick on: mid-way through the reasoning.
    ticks = iter(range(1_000_000))
    monkeypatch.setattr(CancelWatch, "cancel_requested", lambda watch, response_id: next(ticks) >= 10)
    response = create(tenant, input=LONG_ANSWER, background=True, metadata={"echo_token_delay_ms": "5"})
    run_response(response.pk)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.CANCELLED)
    assert announced["output"] and announced["output"][-1]["status"] == "incomplete"


def test_failed_on_output_that_is_not_harmony(tenant):
    response = create(tenant, input=MALFORMED)
    run_response(response.pk)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.FAILED)
    assert "not valid harmony" in announced["error"]["message"]


def test_failed_when_the_engine_dies(tenant):
    response = create(tenant, metadata={"echo_die_after_tokens": "5"})
    run_response(response.pk)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.FAILED)
    assert "engine stopped" in announced["error"]["message"]


def test_failed_at_the_tool_loop_limit(tenant, tmp_path: Path):
    with override_settings(MAX_TOOL_TURNS=1, WEB_SEARCH_INDEX_PATH=tmp_path / "index.sqlite3"):
        response = create(tenant, input=SEARCH_FOREVER, tools=[{"type": "web_search"}])
        run_response(response.pk)
    announced = assert_terminal_event_equals_get(response.pk, ResponseStatus.FAILED)
    assert "still calling tools after 1 turns" in announced["error"]["message"]
    assert [item["type"] for item in announced["output"]] == ["reasoning", "web_search_call"]


@pytest.mark.parametrize("cancel_requested, status", [(False, ResponseStatus.FAILED),
                                                       (True, ResponseStatus.CANCELLED)])
@override_settings(RESPONSE_MAX_RECOVERIES=0)  # else a worker continues it (tests/worker/test_continuation.py)
def test_ended_by_the_reaper_when_its_worker_is_lost(tenant, cancel_requested, status):
    response = create(tenant)
    running = claim(response.pk, "worker-a")
    builder = EventBuilder(running, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    builder.apply(MessageStarted("message", None, None))
    builder.apply(ContentDelta("partial"))
    save_batch(running, "worker-a", builder)
    Response.objects.filter(pk=running.pk).update(cancel_requested=cancel_requested,
                                                  lease_expires_at=timezone.now() - timedelta(minutes=1))

    reap_expired_leases()

    announced = assert_terminal_event_equals_get(response.pk, status)
    assert announced["output"][0]["status"] == "incomplete"
    assert announced["output"][0]["content"][0]["text"] == "partial"


def test_deleting_a_running_response_ends_it_first_so_that_it_is_counted(tenant):
    response = create(tenant)
    claim(response.pk, "worker-a")
    delete_response(Response.objects.get(pk=response.pk))
    assert not Response.objects.filter(pk=response.pk).exists()
    assert TenantDailyUsage.objects.get(tenant=tenant).responses == 1
