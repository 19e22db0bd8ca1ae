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

from django.conf import settings
from django.db import transaction
from django.db.models import Q, Subquery
from django.utils import timezone

from responses_app import compaction, lanes, quotas, socket_sessions, steering
from responses_app.conversation import check_prompt, history, previous_chain
from responses_app.conversations import turns
from responses_app.encrypted_reasoning import Unsealable, reasoning_content
from responses_app.errors import APIError, InvalidRequest, NotFound
from responses_app.harmony.client_tools import BY_CALL_TYPE, answered_call_id
from responses_app.models import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    DeferredState,
    InputItem,
    OutputItem,
    Response,
    ResponseStatus,
    ResponseSteer,
    SteerState,
    Tenant,
)
from responses_app.retention import unexpired
from responses_app.selectors import input_items, referenced_item
from responses_app.stream import doorbell
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import end_response, insert_events
from responses_app.task_queue import try_enqueue, try_send
from responses_app.worker.token_usage import Usage

log = logging.getLogger(__name__)


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
    # conversation=: its items are the prompt's history and it gets this response's items.
    conversation_id: str = ""
    # Over the Responses WebSocket: the socket session and lane (stream_id) the response
    # belongs to and the socket following it. ``joins_lane``: it waits behind the lane's
    # running response (a steered successor runs next instead: continue_steered).
    socket_session: str = ""
    stream_id: str = ""
    socket_id: str = ""
    joins_lane: bool = True
    # The store=false response its socket holds (the last one it created), which it may
    # continue as an Open Responses WebSocket does; "" over HTTP.
    socket_held_response: str = ""
    # generate=false (WebSocket): the response is stored with its input and completes at
    # once with no output, for a later previous_response_id (Codex's prewarm).
    generate: bool = True


def create_response(tenant: Tenant, request: CreateRequest) -> Response:
    """Admit a validated request under the tenant's limits, store it as a queued response
    with its input items and its response.created event, and enqueue it once the
    transaction commits. Raises InvalidRequest, NotFound or RateLimited, writing nothing.

    The response returned carries ``created_event``: the response.created event it stored
    (sequence 0), which a streaming create sends without reading it back."""
    params = quotas.apply_output_token_limit(tenant, request.params)
    previous = _previous_response(tenant, request.previous_response_id, request)
    # Steering input that waited for this explicit continuation goes first, in submission order.
    same_session = previous is not None and request.socket_session and request.socket_session == previous.socket_session
    steers = steering.pending_input(previous) if same_session else []
    items = [item for steer in steers for item in steer.input_items] + resolve_input(tenant, request.input_items)
    earlier = _earlier_items(tenant, request, previous)
    _check_function_call_outputs(earlier, items)
    check_prompt(request.model, params, earlier + items, timezone.now().date())
    deferred = request.completion_window != "soonest"
    quotas.check_foreground_concurrency(tenant, request.background)
    with transaction.atomic():
        quotas.reserve_background_slot(tenant, request.background)
        on_lane = request.socket_session and request.joins_lane
        ahead = lanes.lane_waits(tenant.pk, request.socket_session, request.stream_id) if on_lane else None
        waits = deferred or ahead is not None or not request.generate
        now = timezone.now()
        response = Response.objects.create(
            tenant=tenant,
            model=request.model,
            background=request.background,
            store=request.store,
            request=params,
            previous_response_id=previous.id if previous else None,
            conversation_id=request.conversation_id,
            last_sequence_number=0,
            # Marked enqueued in this transaction: the send after the commit then writes
            # nothing more, unless it fails (a create is one write, which matters where
            # writers queue for one lock: SQLite). A deferred one waits for the dispatcher,
            # one behind its lane's running response for that one's end.
            task_id="" if waits else str(uuid.uuid4()),
            enqueued_at=None if waits else now,
            deferred_state=DeferredState.LANE if ahead else DeferredState.WAITING if deferred else "",
            deadline_at=now + completion_window(request.completion_window) if deferred else None,
            continuation_id=request.continuation_id,
            socket_session=request.socket_session,
            stream_id=request.stream_id,
            socket_id=request.socket_id,
            lane_after=ahead,
        )
        if request.conversation_id:
            turns.claim(tenant, request.conversation_id, response)
        InputItem.objects.bulk_create(
            InputItem(response=response, position=position, item_id=item["id"], data=item)
            for position, item in enumerate(items)
        )
        steering.commit(steers, response, SteerState.PENDING)
        builder = EventBuilder(response, next_sequence_number=0)
        builder.lifecycle("response.created", status=ResponseStatus.QUEUED)
        events, _ = builder.drain()
        insert_events(response, events)
        if not request.generate:
            end_response(response.pk, ResponseStatus.COMPLETED, usage=Usage().as_dict())
        elif not waits:
            transaction.on_commit(lambda: _send_created(response))
    response.created_event = events[0]
    return response


def count_input_tokens(tenant: Tenant, request: CreateRequest) -> int:
    """The prompt tokens of the first engine turn of ``request``, were it created now: the
    same history, checks and rendering as create_response (a read; nothing is written)."""
    previous = _previous_response(tenant, request.previous_response_id)
    earlier = _earlier_items(tenant, request, previous)
    items = resolve_input(tenant, request.input_items)
    _check_function_call_outputs(earlier, items)
    return check_prompt(request.model, request.params, earlier + items, timezone.now().date())


def start_compaction(tenant: Tenant, request: CreateRequest) -> tuple[Response, list[dict[str, Any]]]:
    """The summarization turn of a compaction of ``request``'s context (its previous
    response chain, then its input): a store=false response whose prompt is that context
    and the summary request, truncated "auto" so that an over-long context still compacts.
    Returns it (queued) and the items the compaction keeps verbatim."""
    previous = _previous_response(tenant, request.previous_response_id)
    context = _earlier_items(tenant, request, previous) + resolve_input(tenant, request.input_items)
    turn = CreateRequest(
        model=request.model, input_items=[*context, compaction.summary_request_item()], stream=False,
        background=False, store=False, previous_response_id=None,
        params={**request.params, "truncation": "auto", "max_output_tokens": settings.COMPACTION_MAX_OUTPUT_TOKENS})
    return create_response(tenant, turn), compaction.kept_verbatim(context)


def _earlier_items(tenant: Tenant, request: CreateRequest, previous: Response | None) -> list[dict[str, Any]]:
    """The history before the request's input: its conversation's items or its previous
    response chain's (the two are exclusive, validation/create.py)."""
    if request.conversation_id:
        return turns.conversation_history(tenant, request.conversation_id)
    return history(previous_chain(tenant.pk, previous.pk), []) if previous else []


def completion_window(window: str) -> timedelta:
    return timedelta(seconds=settings.COMPLETION_WINDOWS_S[window])


def _send_created(response: Response) -> None:
    """The create's send; its row already says enqueued, so only a failed send writes
    (enqueued_at cleared: the redelivery sweep sends a never-sent response)."""
    if not try_send(response, response.task_id):
        Response.objects.filter(pk=response.pk, task_id=response.task_id).update(enqueued_at=None)
        response.enqueued_at = None


def _previous_response(tenant: Tenant, previous_response_id: str | None,
                       request: CreateRequest | None = None) -> Response | None:
    """The stored response a create continues; or, over a WebSocket, the store=false
    response that socket holds (kept while a socket of its session is live:
    purge_unstored_responses)."""
    if previous_response_id is None:
        return None
    candidates = Response.objects.filter(tenant=tenant, pk=previous_response_id)
    held = request is not None and request.socket_held_response == previous_response_id
    if held:
        candidates = candidates.filter(Q(store=True) | Q(socket_session=request.socket_session))
    else:
        candidates = candidates.filter(store=True)
    previous = unexpired(candidates, tenant).first()
    if previous is None:
        raise NotFound(f"Previous response with id '{previous_response_id}' not found.",
                       param="previous_response_id", code="previous_response_not_found")
    if not previous.is_terminal:
        raise InvalidRequest(
            f"Previous response '{previous_response_id}' is still {previous.status}; wait until it has finished.",
            param="previous_response_id",
        )
    return previous


def resolve_input(tenant: Tenant, input_items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The input as the model reads it: each ``item_reference`` replaced by a copy of the
    item it names (so that the stored input reads the same after the referenced response
    is gone), and each reasoning item's ``encrypted_content`` opened into its content."""
    resolved = []
    for index, item in enumerate(input_items):
        if item["type"] == "item_reference":
            item = referenced_item(tenant, item["id"])
            if item is None:
                raise NotFound(f"Item with id '{input_items[index]['id']}' not found.", param=f"input[{index}].id")
        elif item["type"] == "reasoning" and item.get("encrypted_content"):
            try:
                item = {**item, "content": reasoning_content(tenant.pk, item["encrypted_content"])}
            except Unsealable as error:
                raise InvalidRequest(f"The encrypted_content of input[{index}] cannot be used: {error}.",
                                     param=f"input[{index}].encrypted_content",
                                     code="invalid_encrypted_content") from None
        resolved.append(item)
    return resolved


# The calls a client runs, and the items that answer them.
CALL_OUTPUTS = {"function_call": "function_call_output", "custom_tool_call": "custom_tool_call_output",
                **{call_type: tool.output_type for call_type, tool in BY_CALL_TYPE.items()}}


def _check_function_call_outputs(earlier: list[dict[str, Any]], input_items: list[dict[str, Any]]) -> None:
    """Every output of a client's tool (function_call_output, custom_tool_call_output,
    shell_call_output, ...) must answer a call of it earlier in the conversation (in
    ``earlier``, the history, or earlier in this input)."""
    if not any(item["type"] in CALL_OUTPUTS.values() for item in input_items):
        return
    known = {data["call_id"] for data in earlier if data.get("type") in CALL_OUTPUTS}
    for index, item in enumerate(input_items):
        if item["type"] in CALL_OUTPUTS:
            known.add(item["call_id"])
        elif item["type"] in CALL_OUTPUTS.values() and answered_call_id(item) not in known:
            field = "id" if item["type"] == "local_shell_call_output" else "call_id"
            raise InvalidRequest(f"No tool call found for {item['type']} with call_id '{answered_call_id(item)}'.",
                                 param=f"input[{index}].{field}")


def continue_steered(response: Response) -> None:
    """The worker's ``on_end`` (inside the terminal transaction of ``response``): the
    steering input queued for it becomes the input of a successor that inherits its
    settings, continues from it and runs next on its lane; or stays pending while the
    response waits for client-owned tool output or approval. Input left queued (the
    response failed or was cancelled, or the successor could not be created) fails in
    lanes.response_ended."""
    steers = steering.queued_input(response)
    if not steers or response.status not in (ResponseStatus.COMPLETED, ResponseStatus.INCOMPLETE):
        return
    if steering.required_input(response):
        ResponseSteer.objects.filter(pk__in=[s.pk for s in steers]).update(state=SteerState.PENDING)
        return
    request = CreateRequest(
        model=response.model, input_items=[item for steer in steers for item in steer.input_items], stream=True,
        background=response.background, store=response.store, previous_response_id=response.pk,
        params=response.request, socket_session=response.socket_session, stream_id=response.stream_id,
        socket_id=response.socket_id, joins_lane=False)
    try:
        with transaction.atomic():  # a savepoint: a refused successor leaves the end intact
            successor = create_response(response.tenant, request)
            steering.commit(steers, successor, SteerState.QUEUED)
            # It runs next on the lane (sent at once: the steered response is over), before
            # whatever the client queued behind that one, and is as detached as its parent.
            Response.objects.filter(lane_after_id=response.pk).update(lane_after=successor)
            Response.objects.filter(pk=successor.pk).update(lane_after=response, detached_at=Subquery(
                Response.objects.filter(pk=response.pk).values("detached_at")))
    except APIError as error:
        ResponseSteer.objects.filter(pk__in=[s.pk for s in steers]).update(
            state=SteerState.FAILED, error_code="successor_creation_failed", error_message=error.message)


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


def cancel_detached() -> int:
    """Cancel the foreground responses whose WebSocket went away more than
    WS_RESUME_GRACE_S ago and that no socket has resumed since, as an SSE client's
    hang-up cancels its response. Returns how many."""
    cutoff = timezone.now() - timedelta(seconds=settings.WS_RESUME_GRACE_S)
    stranded = list(Response.objects.filter(detached_at__lt=cutoff, background=False, status__in=ACTIVE_STATUSES))
    for response in stranded:
        request_cancel(response)
    return len(stranded)


def purge_unstored_responses() -> int:
    """Delete store=false responses that ended more than UNSTORED_RETENTION_S ago, but
    those of a WebSocket session with a live socket: it may continue them."""
    cutoff = timezone.now() - timedelta(seconds=settings.UNSTORED_RETENTION_S)
    ended = Response.objects.filter(store=False, status__in=TERMINAL_STATUSES, completed_at__lt=cutoff)
    sessions = set(ended.exclude(socket_session="").values_list("tenant_id", "socket_session").distinct())
    live = [Q(tenant_id=tenant_id, socket_session=session) for tenant_id, session in sessions
            if socket_sessions.is_live(tenant_id, session)]
    for keep in live:
        ended = ended.exclude(keep)
    deleted, _ = ended.delete()
    return deleted
