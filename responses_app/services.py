"""Writes: create, cancel, delete, and the recovery of lost responses.

The API, the admin and the Celery tasks all come through here, so a response changes
state the same way whoever asks. Status changes are compare-and-set UPDATEs, and a
response ends only through stream/store.end_response (its terminal status and event in
one transaction).
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from responses_app import quotas
from responses_app.conversation import check_prompt, history, previous_chain
from responses_app.cooldown import Cooldown
from responses_app.errors import InvalidRequest, NotFound
from responses_app.models import (
    TERMINAL_STATUSES,
    DeferredState,
    InputItem,
    OutputItem,
    Response,
    ResponseStatus,
    Tenant,
)
from responses_app.retention import unexpired
from responses_app.selectors import input_items
from responses_app.stream import doorbell
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import end_response, insert_events

log = logging.getLogger(__name__)

RUN_RESPONSE_TASK = "responses_app.tasks.run_response"
# Redis's broker takes a worker's next message from the lowest priority number first, over
# all the queues it consumes: deferred responses wait behind every interactive one.
INTERACTIVE_PRIORITY = 0
DEFERRED_PRIORITY = 9
BROKER_COOLDOWN_S = 2.0
_broker_cooldown = Cooldown(BROKER_COOLDOWN_S)


@dataclass
class CreateRequest:
    """A validated create request. ``params`` is what the Response row stores and echoes."""

    model: str
    input_items: list[dict[str, Any]]
    stream: bool
    background: bool
    store: bool
    previous_response_id: str | None
    params: dict[str, Any] = field(default_factory=dict)
    # background_options: "soonest" runs now; "2h" / "8h" are deferred (deferred.py).
    completion_window: str = "soonest"
    continuation_id: str = ""


def create_response(tenant: Tenant, request: CreateRequest) -> Response:
    """Admit a validated request under the tenant's limits, store it as a queued response
    with its input items and its response.created event, and enqueue it once the
    transaction commits. Raises InvalidRequest, NotFound or RateLimited, writing nothing.

    The response returned carries ``created_event``: the response.created event it stored
    (sequence 0), which a streaming create sends without reading it back."""
    params = quotas.apply_output_token_limit(tenant, request.params)
    previous = _previous_response(tenant, request.previous_response_id)
    chain = previous_chain(tenant.pk, previous.pk) if previous else []
    _check_function_call_outputs(chain, request.input_items)
    check_prompt(request.model, params, history(chain, request.input_items), timezone.now().date())
    deferred = request.completion_window != "soonest"
    with transaction.atomic():
        quotas.reserve_background_slot(tenant, request.background)
        now = timezone.now()
        response = Response.objects.create(
            tenant=tenant,
            model=request.model,
            background=request.background,
            store=request.store,
            request=params,
            previous_response_id=previous.id if previous else None,
            last_sequence_number=0,
            # Marked enqueued in this transaction: the send after the commit then writes
            # nothing more, unless it fails (a create is one write, which matters where
            # writers queue for one lock: SQLite). A deferred one waits for the dispatcher.
            task_id="" if deferred else str(uuid.uuid4()),
            enqueued_at=None if deferred else now,
            deferred_state=DeferredState.WAITING if deferred else "",
            deadline_at=now + completion_window(request.completion_window) if deferred else None,
            continuation_id=request.continuation_id,
        )
        InputItem.objects.bulk_create(
            InputItem(response=response, position=position, item_id=item["id"], data=item)
            for position, item in enumerate(request.input_items)
        )
        builder = EventBuilder(response, next_sequence_number=0)
        builder.lifecycle("response.created", status=ResponseStatus.QUEUED)
        events, _ = builder.drain()
        insert_events(response, events)
        if not deferred:
            transaction.on_commit(lambda: _send_created(response))
    response.created_event = events[0]
    return response


def completion_window(window: str) -> timedelta:
    return timedelta(seconds=settings.COMPLETION_WINDOWS_S[window])


def send(response: Response, task_id: str, priority: int = INTERACTIVE_PRIORITY) -> None:
    """Publish the response's task to its model's queue."""
    # By name: the task module imports the worker, which writes through this module.
    queue = settings.MODEL_REGISTRY[response.model]["queue"]
    current_app.send_task(RUN_RESPONSE_TASK, args=[response.pk], queue=queue, task_id=task_id, priority=priority)


def _try_send(response: Response, task_id: str, priority: int = INTERACTIVE_PRIORITY) -> bool:
    """Send, or leave the response for the redelivery sweep (a broker outage: after one
    failed send, this process does not try again for BROKER_COOLDOWN_S)."""
    if _broker_cooldown.active:
        return False
    try:
        send(response, task_id, priority)
    except Exception as error:
        _broker_cooldown.failed()
        log.warning("could not enqueue %s (%s: %s); the redelivery sweep will send it", response.pk,
                    type(error).__name__, error)
        return False
    _broker_cooldown.succeeded()
    return True


def _send_created(response: Response) -> None:
    """The create's send; its row already says enqueued, so only a failed send writes
    (enqueued_at cleared: the redelivery sweep sends a never-sent response)."""
    if not _try_send(response, response.task_id):
        Response.objects.filter(pk=response.pk, task_id=response.task_id).update(enqueued_at=None)
        response.enqueued_at = None


def try_enqueue(response: Response, priority: int = INTERACTIVE_PRIORITY, **fields: Any) -> bool:
    """Send the response's task and mark it enqueued (with ``fields``), or leave it for
    the redelivery sweep."""
    task_id = str(uuid.uuid4())
    if not _try_send(response, task_id, priority):
        return False
    now = timezone.now()
    Response.objects.filter(pk=response.pk).update(task_id=task_id, enqueued_at=now, **fields)
    response.task_id, response.enqueued_at = task_id, now
    return True


def _previous_response(tenant: Tenant, previous_response_id: str | None) -> Response | None:
    if previous_response_id is None:
        return None
    previous = unexpired(Response.objects.filter(tenant=tenant, pk=previous_response_id, store=True), tenant).first()
    if previous is None:
        raise NotFound(f"Previous response with id '{previous_response_id}' not found.",
                       param="previous_response_id", code="previous_response_not_found")
    if not previous.is_terminal:
        raise InvalidRequest(
            f"Previous response '{previous_response_id}' is still {previous.status}; wait until it has finished.",
            param="previous_response_id",
        )
    return previous


def _check_function_call_outputs(chain: list[Response], input_items: list[dict[str, Any]]) -> None:
    """Every function_call_output must answer a function_call earlier in the conversation
    (in the previous_response_id chain or earlier in this input)."""
    if not any(item["type"] == "function_call_output" for item in input_items):
        return
    known = {data["call_id"] for data in history(chain, []) if data.get("type") == "function_call"}
    for index, item in enumerate(input_items):
        if item["type"] == "function_call":
            known.add(item["call_id"])
        elif item["type"] == "function_call_output" and item["call_id"] not in known:
            raise InvalidRequest(f"No tool call found for function call output with call_id '{item['call_id']}'.",
                                 param=f"input[{index}].call_id")


def request_cancel(response: Response) -> Response:
    """Cancel a queued or running response; a finished one is returned unchanged.

    A queued response is ended here at once (compare-and-set against the worker's claim);
    a running one gets the flag, which its worker sees within a second and honours by
    aborting the engine request and writing the terminal state.
    """
    if response.is_terminal:
        return response
    Response.objects.filter(pk=response.pk).exclude(status__in=TERMINAL_STATUSES).update(cancel_requested=True)
    end_response(response.pk, ResponseStatus.CANCELLED, only_if_status=ResponseStatus.QUEUED)
    response.refresh_from_db()
    return response


def cancel_by_id(response_id: str) -> None:
    """Cancel a response nobody will read any more (its foreground client hung up)."""
    response = Response.objects.filter(pk=response_id).first()
    if response is not None:
        request_cancel(response)


def rerun_response(response: Response) -> Response:
    """A new response of the same tenant that repeats ``response``: the same request
    parameters, input items and previous_response_id, with ``rerun_of`` = the original,
    validated, stored and enqueued as an API create is. The original is not changed.

    It runs in the background (and is therefore stored): nobody waits on it, so the
    worker must not treat it as a foreground response whose client went away.
    """
    # A fresh read: the row given may be stale, and these dicts go into a new row.
    original = Response.objects.select_related("tenant").get(pk=response.pk)
    request = CreateRequest(model=original.model, input_items=input_items(original), stream=False, background=True,
                            store=True, previous_response_id=original.previous_response_id, params=original.request)
    with transaction.atomic():  # rerun_of is set before create_response's on_commit enqueues it
        rerun = create_response(original.tenant, request)
        Response.objects.filter(pk=rerun.pk).update(rerun_of=original)
        rerun.rerun_of = original
    return rerun


def delete_response(response: Response) -> None:
    """Delete a response with its items and events; a queued or running one is ended
    (cancelled) first, so that it is counted like every ended response.

    The worker of a running response notices at its next batch (its lease-guarded UPDATE
    matches no row) and aborts its engine request.
    """
    response_id = response.pk
    with transaction.atomic():
        Response.objects.filter(pk=response_id).exclude(status__in=TERMINAL_STATUSES).update(cancel_requested=True)
        end_response(response_id, ResponseStatus.CANCELLED)
        # Lock the row: a worker's batch starts by updating it, so no item or event can be
        # inserted between collecting the related rows and deleting them.
        Response.objects.select_for_update().filter(pk=response_id).first()
        response.delete()
    doorbell.ring(response_id, -1)  # wakes its readers, who find it gone and end


def reap_expired_leases() -> dict[str, int]:
    """Recover responses whose worker vanished (its lease expired). (Queued responses
    whose message was lost are redelivery.py's.)

    One that had emitted nothing beyond its lifecycle events is re-queued (the retry
    starts from scratch); one that had streamed output, or used up its attempts, is failed
    with a clear error and a terminal event, so no response stays in_progress forever.
    """
    now = timezone.now()
    counts = {"requeued": 0, "failed": 0}
    expired = Response.objects.filter(status=ResponseStatus.IN_PROGRESS, lease_expires_at__lt=now)
    for response in expired.only("id", "model", "attempts", "cancel_requested"):
        has_output = OutputItem.objects.filter(response_id=response.pk).exists()
        if not has_output and not response.cancel_requested and response.attempts < settings.RESPONSE_MAX_ATTEMPTS:
            requeued = Response.objects.filter(pk=response.pk, status=ResponseStatus.IN_PROGRESS,
                                               lease_expires_at__lt=now).update(
                status=ResponseStatus.QUEUED, lease_owner="", lease_expires_at=None, enqueued_at=None)
            if requeued:
                counts["requeued"] += 1
                log.warning("re-queued %s after its worker was lost", response.pk)
                try_enqueue(response)
            continue
        status = ResponseStatus.CANCELLED if response.cancel_requested else ResponseStatus.FAILED
        error = None if response.cancel_requested else {
            "code": "server_error",
            "message": "The worker running this response stopped unexpectedly; the response was ended.",
        }
        if end_response(response.pk, status, error=error, only_if_lease_expired_before=now):
            counts["failed"] += 1
            log.warning("failed %s after its worker was lost", response.pk)
    return counts


def purge_unstored_responses() -> int:
    """Delete store=false responses that ended more than UNSTORED_RETENTION_S ago."""
    cutoff = timezone.now() - timedelta(seconds=settings.UNSTORED_RETENTION_S)
    deleted, _ = Response.objects.filter(store=False).filter(
        Q(status__in=TERMINAL_STATUSES, completed_at__lt=cutoff)
    ).delete()
    return deleted
