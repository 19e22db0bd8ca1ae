"""The rules of WebSocket lanes and steering at the service layer: a lane's responses run
one after another, steering input is owned by the server from its acceptance and ends in
exactly one of: a successor's input, pending for an explicit continuation, or failed."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from responses_app.dispatch import task_queue
from responses_app.models import DeferredState, OutputItem, Response, ResponseStatus, ResponseSteer, SteerState, Tenant
from responses_app.services.create import create_response
from responses_app.services.ended import end_response
from responses_app.services.recovery import cancel_detached
from responses_app.sessions import steering
from responses_app.validation.create import parse_create_request

pytestmark = [pytest.mark.django_db, pytest.mark.core]
SESSION = "session-1"



@pytest.fixture
def sent(monkeypatch) -> list[str]:
    """The responses handed to the broker."""
    sent: list[str] = []
    monkeypatch.setattr(task_queue, "send", lambda response, task_id, priority=0, **_: sent.append(response.pk))
    return sent


def on_lane(tenant: Tenant, stream_id: str = "a", session: str = SESSION, **body: Any) -> Response:
    request = parse_create_request({"model": "echo", "input": "Hi", "stream": True, **body})
    return create_response(tenant, replace(request, socket_session=session, stream_id=stream_id, socket_id="socket-1"))


def steer(tenant: Tenant, response: Response, text: str, session: str = SESSION) -> ResponseSteer:
    items = parse_create_request({"model": "echo", "input": text}).input_items
    return steering.accept_steer(tenant, session, response.pk, text, items)


def running(response: Response) -> None:
    Response.objects.filter(pk=response.pk).update(status=ResponseStatus.IN_PROGRESS)


def test_a_lane_runs_its_responses_one_after_another(tenant, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        first, second, third = on_lane(tenant), on_lane(tenant), on_lane(tenant)
        other_lane = on_lane(tenant, stream_id="b")
    assert sent == [first.pk, other_lane.pk]
    for waiting, ahead in ((second, first), (third, second)):
        waiting.refresh_from_db()
        assert (waiting.lane_after_id, waiting.deferred_state, waiting.enqueued_at) == (ahead.pk, "lane", None)
    with django_capture_on_commit_callbacks(execute=True):
        end_response(first.pk, ResponseStatus.COMPLETED)
    assert sent[-1] == second.pk
    assert Response.objects.get(pk=third.pk).deferred_state == DeferredState.LANE  # still behind the second
    with django_capture_on_commit_callbacks(execute=True):
        end_response(second.pk, ResponseStatus.CANCELLED)  # any end moves the lane on
    assert sent[-1] == third.pk


def test_a_steered_response_s_successor_takes_the_input_in_order_and_runs_before_the_queue(
        tenant, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        parent = on_lane(tenant, instructions="Be brief.")
        queued = on_lane(tenant)
    running(parent)
    steers = [steer(tenant, parent, "First"), steer(tenant, parent, "Second")]
    assert Response.objects.get(pk=parent.pk).steer_requested
    with django_capture_on_commit_callbacks(execute=True):
        end_response(parent.pk, ResponseStatus.INCOMPLETE, incomplete_details={"reason": "steered"})
    successor = Response.objects.get(pk=ResponseSteer.objects.get(pk=steers[0].pk).successor_id)
    assert [s.state for s in ResponseSteer.objects.filter(response=parent)] == [SteerState.COMMITTED] * 2
    assert successor.previous_response_id == parent.pk and successor.request["instructions"] == "Be brief."
    assert [i.data["content"][0]["text"] for i in successor.input_items.order_by("position")] == ["First", "Second"]
    assert (successor.stream_id, successor.lane_after_id, successor.deferred_state) == ("a", parent.pk, "")
    assert Response.objects.get(pk=queued.pk).lane_after_id == successor.pk  # behind the successor now
    assert sent[-1] == successor.pk and queued.pk not in sent


def test_steering_input_waits_for_the_explicit_continuation_after_a_function_call(
        tenant, sent, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        parent = on_lane(tenant)
    running(parent)
    OutputItem.objects.create(response=parent, output_index=0, item_id="fc_1", item_type="function_call",
                              status="completed", data={"id": "fc_1", "type": "function_call", "call_id": "call_1",
                                                        "name": "get_weather", "arguments": "{}"})
    pending = steer(tenant, parent, "Also this")
    end_response(parent.pk, ResponseStatus.COMPLETED)
    assert ResponseSteer.objects.get(pk=pending.pk).state == SteerState.PENDING
    [outcome] = steering.outcomes(Response.objects.get(pk=parent.pk))
    assert outcome.required_input == [{"type": "function_call_output", "call_id": "call_1", "name": "get_weather"}]
    with django_capture_on_commit_callbacks(execute=True):
        continuation = on_lane(tenant, previous_response_id=parent.pk, input=[
            {"type": "function_call_output", "call_id": "call_1", "output": "sunny"}])
    assert [i.data["type"] for i in continuation.input_items.order_by("position")] == [
        "message", "function_call_output"]
    assert ResponseSteer.objects.get(pk=pending.pk).successor_id == continuation.pk


def test_input_queued_for_a_response_that_fails_or_is_cancelled_is_handed_back(tenant, sent):
    for status in (ResponseStatus.FAILED, ResponseStatus.CANCELLED):
        response = on_lane(tenant)
        running(response)
        queued = steer(tenant, response, "Too late")
        end_response(response.pk, status)
        failed = ResponseSteer.objects.get(pk=queued.pk)
        assert (failed.state, failed.error_code) == (SteerState.FAILED, "response_not_active")
        assert [o.steer.pk for o in steering.outcomes(Response.objects.get(pk=response.pk))] == [queued.pk]


def test_a_steer_is_refused_for_another_session_a_finished_response_and_past_the_cap(tenant, sent, settings):
    settings.WS_MAX_PENDING_STEERS = 2
    response = on_lane(tenant)
    running(response)
    with pytest.raises(steering.SteerRefused) as refused:
        steer(tenant, response, "Hi", session="another-session")
    assert refused.value.code == "response_not_found"
    steer(tenant, response, "One"), steer(tenant, response, "Two")
    with pytest.raises(steering.SteerRefused) as refused:
        steer(tenant, response, "Three")
    assert refused.value.code == "too_many_pending_steers"
    end_response(response.pk, ResponseStatus.COMPLETED)
    with pytest.raises(steering.SteerRefused) as refused:
        steer(tenant, response, "Late")
    assert refused.value.code == "response_already_completed"
    assert ResponseSteer.objects.filter(response=response).count() == 2


def test_a_foreground_response_whose_socket_went_away_is_cancelled_after_the_grace(tenant, sent, settings):
    from responses_app.sessions import sockets

    settings.WS_RESUME_GRACE_S = 0
    foreground, background = on_lane(tenant), on_lane(tenant, stream_id="b", background=True)
    sockets.detach(tenant, SESSION)
    assert cancel_detached() == 1
    assert Response.objects.get(pk=foreground.pk).status == ResponseStatus.CANCELLED
    assert Response.objects.get(pk=background.pk).status == ResponseStatus.QUEUED
    # A socket that resumes the session in time takes the responses back.
    again = on_lane(tenant, stream_id="c")
    sockets.detach(tenant, SESSION)
    starts = sockets.resume(tenant, SESSION, "socket-2", seen={})
    assert {s.response_id for s in starts} == {background.pk, again.pk}
    assert cancel_detached() == 0


def test_a_lane_response_stranded_behind_an_ended_one_is_sent_by_the_redelivery_sweep(tenant, sent):
    from datetime import timedelta

    from django.utils import timezone

    from responses_app.services import redelivery

    first, second = on_lane(tenant), on_lane(tenant)
    later = timezone.now() + timedelta(minutes=1)
    assert second.pk not in {r.pk for r in redelivery._never_sent(later)}  # it waits for the first
    # The first ended without releasing it (the release was lost with its process).
    Response.objects.filter(pk=first.pk).update(status=ResponseStatus.COMPLETED)
    assert second.pk in {r.pk for r in redelivery._never_sent(later)}
