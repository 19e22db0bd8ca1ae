"""The redelivery sweep and the worker's acknowledgement, on the test Redis as the broker:
a lost message is sent again, a waiting one is not, a never-sent one is sent, a queue no
worker consumes fails its responses after the bound, and a failed ack stops nothing."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator
from datetime import timedelta

import pytest
from celery import current_app
from django.utils import timezone

from responses_app import tasks
from responses_app.dispatch import task_queue
from responses_app.lib.cooldown import Cooldown
from responses_app.models import Response, ResponseEvent, ResponseStatus, Tenant
from responses_app.services import redelivery
from responses_app.worker.delivery import ResponseTaskRequest
from tests.services.test_services import create

pytestmark = [pytest.mark.django_db, pytest.mark.core]



@pytest.fixture
def queue(settings) -> Iterator[str]:
    """A model queue of this test's own, which no worker consumes."""
    name = f"test-redelivery-{uuid.uuid4().hex[:8]}"
    settings.MODEL_REGISTRY = {"echo": {**settings.MODEL_REGISTRY["echo"], "queue": name}}
    settings.RESPONSE_RESEND_AFTER_S = 5
    yield name
    with current_app.connection_for_write() as connection:
        connection.default_channel.queue_purge(name)


@pytest.fixture(autouse=True)
def broker_cooldown(monkeypatch) -> None:
    monkeypatch.setattr(task_queue, "_broker_cooldown", Cooldown(task_queue.BROKER_COOLDOWN_S))


def enqueued(tenant: Tenant, count: int, django_capture_on_commit_callbacks, waited_s: float = 10) -> list[Response]:
    """Responses created and sent as the API does, which have waited ``waited_s`` since."""
    responses = []
    for _ in range(count):
        with django_capture_on_commit_callbacks(execute=True):
            responses.append(create(tenant))
    sent_at = timezone.now() - timedelta(seconds=waited_s)
    for index, response in enumerate(responses):  # in the order they were sent
        Response.objects.filter(pk=response.pk).update(enqueued_at=sent_at + timedelta(milliseconds=index))
    return [Response.objects.get(pk=r.pk) for r in responses]


def messages_in(queue: str) -> list[str]:
    """The response ids of the messages in ``queue``, in the order workers would take them
    (taking them off the queue)."""
    ids = []
    with current_app.connection_for_write() as connection:
        while (message := connection.default_channel.basic_get(queue)) is not None:
            ids.append(message.decode()[0][0])  # protocol 2: (args, kwargs, embed)
            message.ack()
    return ids


def lose_oldest(queue: str, count: int) -> None:
    with current_app.connection_for_write() as connection:
        for _ in range(count):
            connection.default_channel.basic_get(queue).ack()


def test_responses_waiting_in_their_queue_are_not_sent_again(tenant, queue, django_capture_on_commit_callbacks):
    waiting = enqueued(tenant, 3, django_capture_on_commit_callbacks)

    assert redelivery.redeliver_unclaimed()["resent"] == 0
    assert messages_in(queue) == [r.pk for r in waiting]


def test_responses_whose_messages_were_lost_are_sent_again_oldest_first_and_once(
        tenant, queue, django_capture_on_commit_callbacks):
    first, second, third, fourth = enqueued(tenant, 4, django_capture_on_commit_callbacks)
    lose_oldest(queue, 2)  # as if a worker had taken them and died, or the broker dropped them

    assert redelivery.redeliver_unclaimed()["resent"] == 2
    assert redelivery.redeliver_unclaimed()["resent"] == 0  # the queue holds all four again
    assert messages_in(queue) == [third.pk, fourth.pk, first.pk, second.pk]
    first.refresh_from_db()
    assert first.task_id and first.enqueued_at > timezone.now() - timedelta(seconds=5)


def test_a_purged_queue_is_filled_again_but_not_before_its_responses_waited_long_enough(
        tenant, queue, django_capture_on_commit_callbacks):
    old = enqueued(tenant, 2, django_capture_on_commit_callbacks)
    new = enqueued(tenant, 1, django_capture_on_commit_callbacks, waited_s=0)
    with current_app.connection_for_write() as connection:
        connection.default_channel.queue_purge(queue)

    assert redelivery.redeliver_unclaimed()["resent"] == 2
    assert messages_in(queue) == [r.pk for r in old]
    assert Response.objects.get(pk=new[0].pk).status == ResponseStatus.QUEUED  # its turn comes at the next sweep


def test_a_response_whose_send_failed_is_sent_by_the_sweep_after_the_grace(
        tenant, queue, monkeypatch, django_capture_on_commit_callbacks):
    def broker_down(response: Response, task_id: str, priority: int = 0, **_: object) -> None:
        raise ConnectionError("Error 111 connecting to the broker. Connection refused.")

    monkeypatch.setattr(task_queue, "send", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        unsent = create(tenant)  # the create itself succeeds
    unsent.refresh_from_db()
    assert (unsent.status, unsent.enqueued_at) == (ResponseStatus.QUEUED, None)
    monkeypatch.undo()
    task_queue._broker_cooldown.succeeded()

    assert redelivery.redeliver_unclaimed()["enqueued"] == 0  # its create's own send may be on the way
    Response.objects.filter(pk=unsent.pk).update(created_at=timezone.now() - timedelta(minutes=1))
    assert redelivery.redeliver_unclaimed()["enqueued"] == 1
    assert messages_in(queue) == [unsent.pk]


def test_after_a_failed_send_the_process_leaves_the_broker_alone_for_the_cooldown(tenant, monkeypatch):
    sends: list[str] = []

    def broker_down(response: Response, task_id: str, priority: int = 0, **_: object) -> None:
        sends.append(response.pk)
        raise ConnectionError("Connection refused.")

    monkeypatch.setattr(task_queue, "send", broker_down)
    response = Response.objects.create(tenant=tenant, model="echo")
    assert task_queue.try_enqueue(response) is False
    assert task_queue.try_enqueue(response) is False
    assert sends == [response.pk]  # the second create did not wait for the broker


def test_responses_of_a_queue_that_no_worker_consumes_fail_after_the_bound(
        tenant, queue, settings, django_capture_on_commit_callbacks):
    settings.RESPONSE_UNCLAIMED_FAIL_AFTER_S = 60
    stranded, recent = enqueued(tenant, 2, django_capture_on_commit_callbacks)
    Response.objects.filter(pk=stranded.pk).update(created_at=timezone.now() - timedelta(minutes=2))

    assert redelivery.redeliver_unclaimed()["failed"] == 1  # asks the live workers: none consumes the queue

    stranded.refresh_from_db()
    assert stranded.status == ResponseStatus.FAILED
    assert stranded.error == {"code": "server_error", "message": (
        f"No worker serves model 'echo' (queue '{queue}'): the response was not started within 60 s.")}
    assert ResponseEvent.objects.filter(response=stranded).order_by("-sequence_number")[0].type == "response.failed"
    assert Response.objects.get(pk=recent.pk).status == ResponseStatus.QUEUED


def test_responses_waiting_long_for_busy_workers_do_not_fail(
        tenant, queue, settings, monkeypatch, django_capture_on_commit_callbacks):
    settings.RESPONSE_UNCLAIMED_FAIL_AFTER_S = 60
    (waiting,) = enqueued(tenant, 1, django_capture_on_commit_callbacks)
    Response.objects.filter(pk=waiting.pk).update(created_at=timezone.now() - timedelta(minutes=2))
    # The one boundary faked here: the answer of the live workers' inspection.
    monkeypatch.setattr(redelivery.broker, "queue_consumed", lambda name: name == queue)

    assert redelivery.redeliver_unclaimed()["failed"] == 0
    assert Response.objects.get(pk=waiting.pk).status == ResponseStatus.QUEUED


def test_a_message_whose_connection_is_gone_is_acknowledged_without_raising(
        tenant, queue, django_capture_on_commit_callbacks, monkeypatch, caplog):
    enqueued(tenant, 1, django_capture_on_commit_callbacks)
    with current_app.connection_for_write() as connection:
        message = connection.default_channel.basic_get(queue)
        request = ResponseTaskRequest(message, on_ack=message.ack_log_error, app=current_app,
                                      task=tasks.run_response)

        def ack_on_a_closed_transport(delivery_tag, multiple=False):
            # What kombu's Redis channel raised in the worker that died after a Redis restart.
            raise AttributeError("'NoneType' object has no attribute 'hostname'")

        monkeypatch.setattr(message.channel, "basic_ack", ack_on_a_closed_transport)
        with caplog.at_level(logging.WARNING, logger="responses_app.worker.delivery"):
            request.acknowledge()

    assert request.acknowledged
    assert "could not be acknowledged (AttributeError" in caplog.text


def test_every_task_acknowledges_its_message_best_effort():
    # A beat sweep's failed ack stopped a worker in a Redis restart, as a response's once did.
    from tools_app import tasks as tool_tasks

    for task in (tasks.run_response, tasks.reap_expired_leases, tasks.advance_batches,
                 tool_tasks.expire_idle_containers):
        assert task.Request is ResponseTaskRequest, task.name
