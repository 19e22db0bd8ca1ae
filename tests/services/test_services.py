"""The invariants at the service layer: create, claim, batches under the lease, cancel,
the reaper, the purge, delete, and the whole worker path in this process.

Every test runs inside pytest-django's rolled-back transaction (``db``): never the
truncating transactional fixtures, which would wipe the tenants of the live tests.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import IntegrityError, connection, transaction
from django.test import override_settings
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import responses_app.services.create
from responses_app.context.history import prompt_request
from responses_app.harmony.parser import ContentDelta, MessageStarted
from responses_app.harmony.prompt import render_prompt
from responses_app.models import InputItem, OutputItem, Response, ResponseEvent, ResponseStatus, Tenant
from responses_app.models.response_params import ResponseParams
from responses_app.services.cancel import delete_response, request_cancel
from responses_app.services.create import create_response
from responses_app.services.ended import end_response
from responses_app.services.recovery import purge_unstored_responses, reap_expired_leases
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import LeaseLost, save_batch
from responses_app.validation.create import parse_create_request
from responses_app.wire.errors import InvalidRequest, NotFound
from responses_app.wire.usage import Usage
from responses_app.worker.cancel_watch import CancelWatch
from responses_app.worker.claim import claim
from responses_app.worker.run import run_response

pytestmark = [pytest.mark.django_db, pytest.mark.core]

ANSWER_SCRIPT = ("<|channel|>analysis<|message|>Thinking it over.<|end|>"
                 "<|start|>assistant<|channel|>final<|message|>The answer is 42.<|return|>")
CALL_SCRIPT = ("<|channel|>analysis<|message|>I should call get_weather.<|end|>"
               "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json"
               '<|message|>{"city":"Paris"}<|call|>')
WEATHER_TOOL = {"type": "function", "name": "get_weather", "description": "Weather of a city.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}



def create(tenant: Tenant, **body: Any) -> Response:
    """A response made the way the API makes it; its on_commit enqueue is not run."""
    request = parse_create_request({"model": "echo", "input": "Hello there", **body})
    return create_response(tenant, request)


@pytest.fixture
def queued(tenant, django_capture_on_commit_callbacks) -> Response:
    with django_capture_on_commit_callbacks(execute=False):
        return create(tenant)


def events_of(response: Response) -> list[tuple[int, str]]:
    return list(ResponseEvent.objects.filter(response=response).order_by("sequence_number")
                .values_list("sequence_number", "type"))


def expire_lease(response: Response, ago_s: float = 60) -> None:
    Response.objects.filter(pk=response.pk).update(lease_expires_at=timezone.now() - timedelta(seconds=ago_s))


def start_with_open_message(response: Response, owner: str = "worker-a") -> Response:
    """Claim the response and commit in_progress plus a message that is still streaming."""
    running = claim(response.pk, owner)
    assert running is not None
    builder = EventBuilder(running, next_sequence_number=running.last_sequence_number + 1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    builder.apply(MessageStarted("message", None, None))
    builder.apply(ContentDelta("partial"))
    save_batch(running, owner, builder)
    return running


def no_events(response: Response) -> EventBuilder:
    """A builder with nothing to write: its batch only renews the lease."""
    return EventBuilder(response, next_sequence_number=response.last_sequence_number + 1)


# --- create --------------------------------------------------------------------------------


def test_create_writes_the_queued_response_its_input_items_and_one_created_event(
        tenant, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = create(tenant, input=[{"role": "user", "content": "first"},
                                         {"role": "user", "content": "second"}])

    response.refresh_from_db()
    assert response.status == ResponseStatus.QUEUED
    assert (response.tenant_id, response.model, response.attempts, response.lease_owner) == (
        tenant.pk, "echo", 0, "")
    assert response.last_sequence_number == 0
    inputs = list(InputItem.objects.filter(response=response).order_by("position"))
    assert [(item.position, item.data["content"][0]["text"]) for item in inputs] == [(0, "first"), (1, "second")]
    assert all(item.item_id == item.data["id"] for item in inputs)
    assert events_of(response) == [(0, "response.created")]
    created = ResponseEvent.objects.get(response=response).payload
    assert (created["response"]["id"], created["response"]["status"]) == (response.pk, "queued")
    assert len(callbacks) == 1  # the enqueue, once the transaction commits


def test_an_invalid_request_is_rejected_before_anything_is_written(tenant):
    # The tenant's: other tests' finished responses may be packed (their events deleted) meanwhile.
    mine = {"response__tenant": tenant}
    before = (Response.objects.filter(tenant=tenant).count(), InputItem.objects.filter(**mine).count(),
              ResponseEvent.objects.filter(**mine).count())
    with pytest.raises(InvalidRequest) as raised:
        parse_create_request({"model": "echo", "input": "hi", "temperature": 9})
    assert raised.value.param == "temperature"
    assert (Response.objects.filter(tenant=tenant).count(), InputItem.objects.filter(**mine).count(),
            ResponseEvent.objects.filter(**mine).count()) == before


def test_a_function_call_output_without_its_call_is_rejected_and_writes_nothing(
        tenant, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, pytest.raises(InvalidRequest):
        create(tenant, input=[{"type": "function_call_output", "call_id": "call_unknown", "output": "{}"}])
    assert not Response.objects.filter(tenant=tenant).exists()
    assert callbacks == []


def test_a_previous_response_that_is_still_running_is_rejected_and_writes_nothing(
        tenant, queued, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks, pytest.raises(InvalidRequest):
        create(tenant, previous_response_id=queued.pk)
    with pytest.raises(NotFound):
        create(tenant, previous_response_id="resp_never_existed")
    assert list(Response.objects.filter(tenant=tenant)) == [queued]
    assert callbacks == []


def test_create_is_one_transaction_a_failure_while_writing_its_event_leaves_nothing(
        tenant, monkeypatch, django_capture_on_commit_callbacks):
    def broken_insert(response, events):
        raise RuntimeError("the database went away")

    monkeypatch.setattr(responses_app.services.create, "insert_events", broken_insert)
    with django_capture_on_commit_callbacks(execute=False) as callbacks, pytest.raises(RuntimeError):
        create(tenant)
    assert not Response.objects.filter(tenant=tenant).exists()
    assert not InputItem.objects.filter(response__tenant=tenant).exists()
    assert callbacks == []


def test_the_unique_constraint_rejects_a_second_event_with_the_same_sequence_number(queued):
    with pytest.raises(IntegrityError), transaction.atomic():
        ResponseEvent.objects.create(response=queued, sequence_number=0, type="response.created", data={})
    assert events_of(queued) == [(0, "response.created")]


# --- claim and batches under the lease -------------------------------------------------------


def test_the_first_claim_takes_a_queued_response_and_a_second_claim_gets_nothing(queued):
    claimed = claim(queued.pk, "worker-a")

    assert claimed is not None
    assert (claimed.status, claimed.lease_owner, claimed.attempts) == (ResponseStatus.IN_PROGRESS, "worker-a", 1)
    assert claimed.lease_expires_at > timezone.now() and claimed.started_at is not None
    assert claim(queued.pk, "worker-b") is None
    queued.refresh_from_db()
    assert (queued.lease_owner, queued.attempts) == ("worker-a", 1)


def test_a_response_with_cancel_requested_is_not_claimable(queued):
    Response.objects.filter(pk=queued.pk).update(cancel_requested=True)
    assert claim(queued.pk, "worker-a") is None
    queued.refresh_from_db()
    assert (queued.status, queued.attempts) == (ResponseStatus.QUEUED, 0)


def test_a_finished_or_missing_response_is_not_claimable(queued):
    Response.objects.filter(pk=queued.pk).update(status=ResponseStatus.COMPLETED)
    assert claim(queued.pk, "worker-a") is None
    assert claim("resp_never_existed", "worker-a") is None


def test_save_batch_writes_events_and_items_and_advances_the_sequence_while_the_owner_holds_the_lease(queued):
    running = start_with_open_message(queued)

    running.refresh_from_db()
    assert running.last_sequence_number == 4
    assert events_of(running) == [(0, "response.created"), (1, "response.in_progress"),
                                  (2, "response.output_item.added"), (3, "response.content_part.added"),
                                  (4, "response.output_text.delta")]
    item = OutputItem.objects.get(response=running)
    assert (item.output_index, item.item_type, item.status) == (0, "message", "in_progress")
    assert item.data["content"][0]["text"] == "partial"


def test_save_batch_raises_lease_lost_and_writes_nothing_for_another_owner(queued):
    running = claim(queued.pk, "worker-a")
    builder = EventBuilder(running, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    builder.apply(MessageStarted("message", None, None))

    with pytest.raises(LeaseLost):
        save_batch(running, "worker-b", builder)

    running.refresh_from_db()
    assert running.last_sequence_number == 0
    assert events_of(running) == [(0, "response.created")]
    assert not OutputItem.objects.filter(response=running).exists()


def test_save_batch_returns_the_cancel_flag(queued):
    running = claim(queued.pk, "worker-a")
    builder = EventBuilder(running, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    assert save_batch(running, "worker-a", builder) is False

    request_cancel(running)
    assert save_batch(running, "worker-a", builder) is True


def test_end_response_by_the_lease_owner_writes_its_pending_events_ends_it_and_releases_the_lease(queued):
    running = claim(queued.pk, "worker-a")
    builder = EventBuilder(running, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    usage = Usage(input_tokens=3).as_dict()

    assert not end_response(running.pk, ResponseStatus.COMPLETED, usage=usage, builder=builder, lease_owner="worker-b")
    assert end_response(running.pk, ResponseStatus.COMPLETED, usage=usage, builder=builder, lease_owner="worker-a")

    running.refresh_from_db()
    assert (running.status, running.lease_owner, running.lease_expires_at) == (ResponseStatus.COMPLETED, "", None)
    assert running.completed_at is not None and running.last_sequence_number == 2 and running.usage == usage
    assert events_of(running) == [(0, "response.created"), (1, "response.in_progress"), (2, "response.completed")]
    with pytest.raises(LeaseLost):
        save_batch(running, "worker-a", no_events(running))


# --- cancel ---------------------------------------------------------------------------------


def test_cancelling_a_queued_response_ends_it_at_once_with_a_cancelled_terminal_event(queued):
    cancelled = request_cancel(queued)

    assert cancelled.status == ResponseStatus.CANCELLED
    assert cancelled.cancel_requested and cancelled.completed_at is not None
    assert cancelled.last_sequence_number == 1
    assert events_of(cancelled) == [(0, "response.created"), (1, "response.incomplete")]
    terminal = ResponseEvent.objects.get(response=cancelled, sequence_number=1).payload
    assert terminal["response"]["status"] == "cancelled"
    assert claim(queued.pk, "worker-a") is None


def test_cancelling_a_running_response_only_sets_the_flag_for_its_worker(queued):
    running = start_with_open_message(queued)

    after = request_cancel(running)

    assert (after.status, after.cancel_requested, after.lease_owner) == (ResponseStatus.IN_PROGRESS, True, "worker-a")
    assert [t for _, t in events_of(after)][-1] == "response.output_text.delta"
    assert OutputItem.objects.get(response=after).status == "in_progress"


@pytest.mark.parametrize("status", [ResponseStatus.COMPLETED, ResponseStatus.FAILED, ResponseStatus.CANCELLED])
def test_cancelling_a_finished_response_changes_nothing(queued, status):
    Response.objects.filter(pk=queued.pk).update(status=status)
    queued.refresh_from_db()

    assert request_cancel(queued).status == status
    # Also when the caller's copy is stale (it still says queued).
    stale = Response.objects.get(pk=queued.pk)
    stale.status = ResponseStatus.QUEUED
    request_cancel(stale)

    queued.refresh_from_db()
    assert (queued.status, queued.cancel_requested, queued.last_sequence_number) == (status, False, 0)
    assert events_of(queued) == [(0, "response.created")]


def test_cancel_is_idempotent(queued):
    request_cancel(queued)
    request_cancel(queued)
    request_cancel(Response.objects.get(pk=queued.pk))
    assert events_of(queued) == [(0, "response.created"), (1, "response.incomplete")]


# --- end_response without a worker ------------------------------------------------------------


def test_end_response_without_a_worker_never_overrides_a_live_lease(queued):
    running = start_with_open_message(queued)

    assert not end_response(running.pk, ResponseStatus.FAILED, only_if_lease_expired_before=timezone.now())
    running.refresh_from_db()
    assert (running.status, running.lease_owner) == (ResponseStatus.IN_PROGRESS, "worker-a")
    assert [t for _, t in events_of(running)][-1] == "response.output_text.delta"


def test_end_response_without_a_worker_never_overrides_a_response_that_is_no_longer_queued(queued):
    running = claim(queued.pk, "worker-a")

    assert not end_response(running.pk, ResponseStatus.CANCELLED, only_if_status=ResponseStatus.QUEUED)
    running.refresh_from_db()
    assert running.status == ResponseStatus.IN_PROGRESS
    assert events_of(running) == [(0, "response.created")]


def test_end_response_without_a_worker_never_touches_a_finished_response(queued):
    Response.objects.filter(pk=queued.pk).update(status=ResponseStatus.COMPLETED)
    assert not end_response(queued.pk, ResponseStatus.FAILED)
    assert events_of(queued) == [(0, "response.created")]


def test_end_response_without_a_worker_writes_the_status_and_the_terminal_event_in_one_transaction(queued):
    running = start_with_open_message(queued)
    expire_lease(running)
    # A row in the way of the terminal event: the status change must roll back with it.
    ResponseEvent.objects.create(response=running, sequence_number=5, type="response.output_text.delta", data={})

    with pytest.raises(IntegrityError):
        end_response(running.pk, ResponseStatus.FAILED, only_if_lease_expired_before=timezone.now())

    running.refresh_from_db()
    assert (running.status, running.last_sequence_number, running.completed_at) == (
        ResponseStatus.IN_PROGRESS, 4, None)
    assert OutputItem.objects.get(response=running).status == "in_progress"


# --- the reaper -----------------------------------------------------------------------------


def test_the_reaper_requeues_a_lost_response_without_output_and_enqueues_it_again(queued):
    claim(queued.pk, "worker-a")
    Response.objects.filter(pk=queued.pk).update(task_id="task-of-the-lost-worker")
    expire_lease(queued)

    assert reap_expired_leases() == {"requeued": 1, "continued": 0, "failed": 0}

    queued.refresh_from_db()
    assert (queued.status, queued.lease_owner, queued.lease_expires_at) == (ResponseStatus.QUEUED, "", None)
    assert queued.task_id not in ("", "task-of-the-lost-worker")  # a new Celery message was sent
    assert events_of(queued) == [(0, "response.created")]
    assert claim(queued.pk, "worker-b").attempts == 2


@override_settings(RESPONSE_MAX_ATTEMPTS=2)
def test_the_reaper_fails_a_lost_response_that_used_up_its_attempts(queued):
    Response.objects.filter(pk=queued.pk).update(attempts=1)
    claim(queued.pk, "worker-a")
    expire_lease(queued)

    assert reap_expired_leases() == {"requeued": 0, "continued": 0, "failed": 1}

    queued.refresh_from_db()
    assert queued.status == ResponseStatus.FAILED
    assert queued.error["code"] == "server_error"
    assert events_of(queued) == [(0, "response.created"), (1, "response.failed")]


def test_the_reaper_requeues_a_lost_response_with_output_to_be_continued(queued):
    running = start_with_open_message(queued)
    expire_lease(running)

    assert reap_expired_leases() == {"requeued": 0, "continued": 1, "failed": 0}

    running.refresh_from_db()
    assert (running.status, running.recoveries, running.lease_owner) == (ResponseStatus.QUEUED, 1, "")
    # Nothing is written for the continuation: the next worker goes on from the last event.
    assert events_of(running)[-1] == (4, "response.output_text.delta")
    assert OutputItem.objects.get(response=running).status == "in_progress"


@override_settings(RESPONSE_MAX_RECOVERIES=0)
def test_the_reaper_fails_a_lost_response_with_output_and_closes_its_open_item(queued):
    running = start_with_open_message(queued)
    expire_lease(running)

    assert reap_expired_leases() == {"requeued": 0, "continued": 0, "failed": 1}

    running.refresh_from_db()
    assert running.status == ResponseStatus.FAILED
    assert running.error == {"code": "server_error", "message": (
        "The worker running this response stopped unexpectedly; the response was ended.")}
    assert (running.lease_owner, running.lease_expires_at) == ("", None)
    assert running.completed_at is not None
    # The open item's done events, then the terminal event, right after the last committed one.
    assert running.last_sequence_number == 8
    assert events_of(running)[-4:] == [(5, "response.output_text.done"), (6, "response.content_part.done"),
                                       (7, "response.output_item.done"), (8, "response.failed")]
    assert [n for n, _ in events_of(running)] == list(range(9))
    item = OutputItem.objects.get(response=running)
    assert (item.status, item.data["status"]) == ("incomplete", "incomplete")
    failed = ResponseEvent.objects.get(response=running, sequence_number=8).payload["response"]
    assert failed["status"] == "failed" and failed["error"] == running.error
    assert failed["output"] == [item.data]
    # The lost worker, should it wake up, can write nothing more.
    with pytest.raises(LeaseLost):
        save_batch(running, "worker-a", no_events(running))


def test_the_reaper_leaves_a_response_with_a_live_lease_alone(queued):
    running = start_with_open_message(queued)
    just_claimed = claim(Response.objects.create(tenant=queued.tenant, model="echo").pk, "worker-b")
    assert just_claimed is not None

    assert reap_expired_leases() == {"requeued": 0, "continued": 0, "failed": 0}

    for response in (running, just_claimed):
        before = response.lease_expires_at
        response.refresh_from_db()
        assert response.status == ResponseStatus.IN_PROGRESS and response.lease_expires_at == before


def test_the_reaper_leaves_queued_and_finished_responses_alone(queued, tenant):
    finished = Response.objects.create(tenant=tenant, model="echo", status=ResponseStatus.COMPLETED,
                                       lease_expires_at=timezone.now() - timedelta(minutes=5))
    assert reap_expired_leases() == {"requeued": 0, "continued": 0, "failed": 0}
    queued.refresh_from_db()
    finished.refresh_from_db()
    assert (queued.status, finished.status) == (ResponseStatus.QUEUED, ResponseStatus.COMPLETED)


@pytest.mark.parametrize("with_output", [False, True])
def test_the_reaper_ends_a_lost_response_with_cancel_requested_as_cancelled(queued, with_output):
    running = start_with_open_message(queued) if with_output else claim(queued.pk, "worker-a")
    request_cancel(running)
    expire_lease(running)

    assert reap_expired_leases() == {"requeued": 0, "continued": 0, "failed": 1}

    running.refresh_from_db()
    assert running.status == ResponseStatus.CANCELLED and running.error is None
    terminal = ResponseEvent.objects.get(response=running, sequence_number=running.last_sequence_number)
    assert (terminal.type, terminal.payload["response"]["status"]) == ("response.incomplete", "cancelled")


def test_a_requeued_response_is_completed_by_the_next_worker_with_dense_sequence_numbers(queued):
    # The first worker announced in_progress, then vanished before any output.
    first = claim(queued.pk, "worker-a")
    builder = EventBuilder(first, next_sequence_number=1)
    builder.lifecycle("response.in_progress", status=ResponseStatus.IN_PROGRESS)
    save_batch(first, "worker-a", builder)
    expire_lease(first)
    assert reap_expired_leases()["requeued"] == 1

    run_response(queued.pk)

    queued.refresh_from_db()
    assert (queued.status, queued.attempts) == (ResponseStatus.COMPLETED, 2)
    events = events_of(queued)
    assert [n for n, _ in events] == list(range(len(events)))
    types = [t for _, t in events]
    assert types.count("response.in_progress") == 1 and types.count("response.created") == 1
    assert types[-1] == "response.completed"


# --- purge and delete -------------------------------------------------------------------------


@override_settings(UNSTORED_RETENTION_S=60)
def test_purge_deletes_only_unstored_responses_that_ended_before_the_retention(tenant):
    long_ago = timezone.now() - timedelta(minutes=10)
    recently = timezone.now() - timedelta(seconds=5)

    def make(store: bool, status: str, completed_at) -> Response:
        response = Response.objects.create(tenant=tenant, model="echo", store=store, status=status,
                                           completed_at=completed_at, last_sequence_number=0)
        InputItem.objects.create(response=response, position=0, item_id="msg_in", data={"type": "message"})
        OutputItem.objects.create(response=response, output_index=0, item_id="msg_out", item_type="message",
                                  status="completed", data={"type": "message"})
        ResponseEvent.objects.create(response=response, sequence_number=0, type="response.created", data={})
        return response

    expired = [make(False, status, long_ago) for status in
               (ResponseStatus.COMPLETED, ResponseStatus.FAILED, ResponseStatus.INCOMPLETE, ResponseStatus.CANCELLED)]
    kept = [
        make(True, ResponseStatus.COMPLETED, long_ago),
        make(False, ResponseStatus.IN_PROGRESS, None),
        make(False, ResponseStatus.QUEUED, None),
        make(False, ResponseStatus.COMPLETED, recently),
    ]

    purge_unstored_responses()

    assert set(Response.objects.filter(tenant=tenant)) == set(kept)
    gone = [response.pk for response in expired]
    assert not InputItem.objects.filter(response_id__in=gone).exists()
    assert not OutputItem.objects.filter(response_id__in=gone).exists()
    assert not ResponseEvent.objects.filter(response_id__in=gone).exists()
    assert ResponseEvent.objects.filter(response__in=kept).count() == len(kept)


def test_delete_removes_the_response_with_its_items_and_events(tenant):
    response = create(tenant, input="delete me")
    run_response(response.pk)
    assert OutputItem.objects.filter(response=response).exists()
    response_id = response.pk

    delete_response(Response.objects.get(pk=response_id))

    assert not Response.objects.filter(pk=response_id).exists()
    assert not InputItem.objects.filter(response_id=response_id).exists()
    assert not OutputItem.objects.filter(response_id=response_id).exists()
    assert not ResponseEvent.objects.filter(response_id=response_id).exists()


def test_deleting_a_running_response_makes_its_worker_lose_the_lease(queued):
    running = start_with_open_message(queued)

    delete_response(running)

    assert not Response.objects.filter(pk=queued.pk).exists()
    with pytest.raises(LeaseLost):
        save_batch(running, "worker-a", no_events(running))



def test_one_query_polls_the_cancel_flags_of_all_watched_responses(tenant, django_capture_on_commit_callbacks):
    watch = CancelWatch(interval_s=3600)  # its thread sleeps; this test polls by hand
    with django_capture_on_commit_callbacks(execute=False):
        cancelled, running = start_with_open_message(create(tenant)), start_with_open_message(create(tenant))
    with watch.watching(cancelled.pk), watch.watching(running.pk):
        request_cancel(cancelled)
        assert not watch.cancel_requested(cancelled.pk)  # seen at the next poll, not before

        with CaptureQueriesContext(connection) as queries:
            watch.poll()

        assert len(queries) == 1
        assert watch.cancel_requested(cancelled.pk) and not watch.cancel_requested(running.pk)
    assert not watch.cancel_requested(cancelled.pk)  # no longer watched

# --- the whole worker path in this process ---------------------------------------------------


def assert_completed_consistently(response: Response) -> dict[str, Any]:
    events = [event.payload for event in ResponseEvent.objects.filter(response=response).order_by("sequence_number")]
    assert [e["sequence_number"] for e in events] == list(range(len(events)))
    assert [e["type"] for e in events[:2]] == ["response.created", "response.in_progress"]
    assert events[-1]["type"] == "response.completed"
    assert response.last_sequence_number == len(events) - 1
    final = events[-1]["response"]
    items = list(OutputItem.objects.filter(response=response).order_by("output_index"))
    assert [item.item_id for item in items] == [item["id"] for item in final["output"]]
    assert [item.data for item in items] == final["output"]
    added = {e["output_index"]: e["item"]["id"] for e in events if e["type"] == "response.output_item.added"}
    done = {e["output_index"]: e["item"]["id"] for e in events if e["type"] == "response.output_item.done"}
    assert added == done == {index: item.item_id for index, item in enumerate(items)}
    for event in events:
        if "item_id" in event:
            assert added[event["output_index"]] == event["item_id"]
    assert final["usage"] == response.usage
    return final


def test_a_worker_run_completes_the_response_with_dense_events_usage_and_persisted_items(tenant):
    response = create(tenant, input=ANSWER_SCRIPT)

    run_response(response.pk)

    response.refresh_from_db()
    assert response.status == ResponseStatus.COMPLETED
    assert (response.lease_owner, response.lease_expires_at, response.attempts) == ("", None, 1)
    assert response.completed_at is not None and response.error is None
    final = assert_completed_consistently(response)
    assert [item["type"] for item in final["output"]] == ["reasoning", "message"]
    assert final["output"][0]["content"][0]["text"] == "Thinking it over."
    assert final["output"][1]["content"][0]["text"] == "The answer is 42."
    usage = response.usage
    assert usage["input_tokens"] > 0
    assert usage["output_tokens"] > usage["output_tokens_details"]["reasoning_tokens"] > 0
    assert usage["total_tokens"] == usage["input_tokens"] + usage["output_tokens"]


def test_a_worker_run_ends_with_a_function_call_item(tenant):
    response = create(tenant, input=CALL_SCRIPT, tools=[WEATHER_TOOL])

    run_response(response.pk)

    response.refresh_from_db()
    assert response.status == ResponseStatus.COMPLETED
    final = assert_completed_consistently(response)
    call = final["output"][-1]
    assert (call["type"], call["name"], call["arguments"], call["status"]) == (
        "function_call", "get_weather", '{"city":"Paris"}', "completed")


def test_a_worker_run_cut_off_by_max_output_tokens_ends_incomplete(tenant):
    response = create(tenant, input=ANSWER_SCRIPT, max_output_tokens=16)

    run_response(response.pk)

    response.refresh_from_db()
    assert response.status == ResponseStatus.INCOMPLETE
    assert response.incomplete_details == {"reason": "max_output_tokens"}
    assert response.usage["output_tokens"] == 16
    events = events_of(response)
    assert [n for n, _ in events] == list(range(len(events)))
    assert events[-1][1] == "response.incomplete"
    assert OutputItem.objects.filter(response=response).order_by("-output_index")[0].status == "incomplete"


def test_a_worker_finds_nothing_to_do_for_a_cancelled_response(queued):
    request_cancel(queued)
    run_response(queued.pk)
    queued.refresh_from_db()
    assert (queued.status, queued.attempts) == (ResponseStatus.CANCELLED, 0)
    assert events_of(queued) == [(0, "response.created"), (1, "response.incomplete")]


def test_a_conversation_longer_than_the_model_context_is_refused_before_anything_is_written(tenant, settings):
    first = create(tenant, input="My name is Ada and I live in Paris.")
    Response.objects.filter(pk=first.pk).update(status=ResponseStatus.COMPLETED)
    alone = len(render_prompt(prompt_request(ResponseParams(), [user_item("And you?")], timezone.now().date())))
    settings.MODEL_REGISTRY = {"echo": {"engine": "echo", "queue": "model.echo", "max_model_len": alone + 1}}

    create(tenant, input="And you?")  # fits on its own
    with pytest.raises(InvalidRequest) as refused:
        create(tenant, input="And you?", previous_response_id=first.pk)  # the chain makes it too long
    assert refused.value.code == "context_length_exceeded" and str(alone + 1) in refused.value.message
    with pytest.raises(InvalidRequest):
        create(tenant, input="And you? " * 10)
    assert Response.objects.filter(tenant=tenant).count() == 2


def user_item(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


@override_settings(UNSTORED_RETENTION_S=0)
def test_the_purge_keeps_the_store_false_responses_of_a_batch_until_it_has_written_its_results(tenant):
    from responses_app.models import Batch, BatchStatus

    batch = Batch.objects.create(tenant=tenant, endpoint="/v1/chat/completions", input_file_id="file-x",
                                 completion_window="24h", status=BatchStatus.IN_PROGRESS,
                                 expires_at=timezone.now() + timedelta(days=1))
    line = create(tenant, store=False)
    line.batch_id = batch.pk
    line.save(update_fields=["batch_id"])
    end_response(line.pk, ResponseStatus.COMPLETED, usage=Usage().as_dict())
    Response.objects.filter(pk=line.pk).update(completed_at=timezone.now() - timedelta(seconds=5))
    for status in (BatchStatus.IN_PROGRESS, BatchStatus.FINALIZING):
        Batch.objects.filter(pk=batch.pk).update(status=status)
        purge_unstored_responses()
        assert Response.objects.filter(pk=line.pk).exists()
    Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.COMPLETED)
    purge_unstored_responses()
    assert not Response.objects.filter(pk=line.pk).exists()


@override_settings(UNSTORED_RETENTION_S=0)
def test_the_purge_keeps_the_store_false_responses_of_a_live_socket_session(tenant):
    from responses_app.lib.redis_client import shared_client
    from responses_app.sessions.sockets import presence_key

    held = create(tenant, store=False)
    held.socket_session = "live-session"
    held.save(update_fields=["socket_session"])
    plain = create(tenant, store=False)
    for response in (held, plain):
        end_response(response.pk, ResponseStatus.COMPLETED, usage=Usage().as_dict())
    Response.objects.filter(pk__in=[held.pk, plain.pk]).update(completed_at=timezone.now() - timedelta(seconds=5))
    key = presence_key(tenant.pk, "live-session")
    shared_client().zadd(key, {"socket-1": timezone.now().timestamp() + 60})
    try:
        purge_unstored_responses()
        assert list(Response.objects.filter(pk__in=[held.pk, plain.pk]).values_list("pk", flat=True)) == [held.pk]
    finally:
        shared_client().delete(key)
    purge_unstored_responses()  # the socket has gone
    assert not Response.objects.filter(pk=held.pk).exists()
