"""Creating a response: admission under the tenant's limits, the stored request with its
input items and response.created event, and its enqueue once committed; the input token
count and a compaction's turn, which read the same context."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from responses_app.containers.files_in import check_file_ids
from responses_app.context import compaction
from responses_app.context.history import check_prompt, history, previous_chain
from responses_app.conversations import turns
from responses_app.dispatch import placement
from responses_app.dispatch.task_queue import try_send
from responses_app.files.inputs import read_input_files
from responses_app.harmony.client_tools import CALL_OUTPUTS, answered_call_id
from responses_app.models import (
    DeferredState,
    InputItem,
    Response,
    ResponseStatus,
    SteerState,
    Tenant,
)
from responses_app.models.response_params import ResponseParams
from responses_app.prompts.resolve import prompt_input
from responses_app.selectors import referenced_item
from responses_app.sessions import lanes, steering
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import insert_events
from responses_app.tenancy import quotas
from responses_app.tenancy.retention import unexpired
from responses_app.validation.request import CreateRequest
from responses_app.vector_stores.store import usable_stores
from responses_app.wire.encrypted_reasoning import Unsealable, reasoning_content
from responses_app.wire.errors import InvalidRequest, NotFound
from responses_app.wire.search_options import FileSearchTool
from responses_app.wire.tool_types import CodeInterpreterTool


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
    steers = steering.pending_input(previous) if same_session and previous is not None else []
    prompt_items: list[dict[str, Any]] = []
    if params.prompt is not None:
        instructions, prompt_items = prompt_input(tenant, params.prompt, params.instructions)
        params = replace(params, instructions=instructions)
    items = [item for steer in steers for item in steer.input_items] + resolve_input(
        tenant, prompt_items + request.input_items)
    _check_container_files(tenant, params)
    _check_vector_stores(tenant, params)
    earlier = _earlier_items(tenant, request, previous)
    _check_function_call_outputs(earlier, items)
    check_prompt(request.model, params, earlier + items, timezone.now().date())
    deferred = request.completion_window != "soonest"
    # A batch's responses are bounded by BATCH_MAX_IN_FLIGHT instead (batches/runner.py).
    counted = request.background and not request.batch_id
    quotas.check_foreground_concurrency(tenant, request.background)
    with transaction.atomic():
        quotas.reserve_background_slot(tenant, counted)
        on_lane = request.socket_session and request.joins_lane
        ahead = lanes.lane_waits(tenant.pk, request.socket_session, request.stream_id) if on_lane else None
        waits = deferred or ahead is not None or not request.generate
        now = timezone.now()
        response: Response = Response.objects.create(
            tenant=tenant,
            model=request.model,
            background=request.background,
            store=request.store,
            request=params.to_stored(),
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
            batch_id=request.batch_id,
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
        if not waits:
            hint = placement.hint_for(response, params.instructions, items)
            transaction.on_commit(lambda: _send_created(response, hint))
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
        params=replace(request.params, truncation="auto", max_output_tokens=settings.COMPACTION_MAX_OUTPUT_TOKENS))
    return create_response(tenant, turn), compaction.kept_verbatim(context)

def _earlier_items(tenant: Tenant, request: CreateRequest, previous: Response | None) -> list[dict[str, Any]]:
    """The history before the request's input: its conversation's items or its previous
    response chain's (the two are exclusive, validation/create.py)."""
    if request.conversation_id:
        return turns.conversation_history(tenant, request.conversation_id)
    return history(previous_chain(tenant.pk, previous.pk), []) if previous else []

def completion_window(window: str) -> timedelta:
    return timedelta(seconds=settings.COMPLETION_WINDOWS_S[window])

def _send_created(response: Response, hint: placement.Hint) -> None:
    """The create's send; its row already says enqueued, so only a failed send writes
    (enqueued_at cleared: the redelivery sweep sends a never-sent response)."""
    if not try_send(response, response.task_id, hint=hint):
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
    if held and request is not None:
        candidates = candidates.filter(Q(store=True) | Q(socket_session=request.socket_session))
    else:
        candidates = candidates.filter(store=True)
    previous: Response | None = unexpired(candidates, tenant).first()
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
            referenced = referenced_item(tenant, item["id"])
            if referenced is None:
                raise NotFound(f"Item with id '{input_items[index]['id']}' not found.", param=f"input[{index}].id")
            item = referenced
        elif item["type"] == "reasoning" and item.get("encrypted_content"):
            try:
                item = {**item, "content": reasoning_content(tenant.pk, item["encrypted_content"])}
            except Unsealable as error:
                raise InvalidRequest(f"The encrypted_content of input[{index}] cannot be used: {error}.",
                                     param=f"input[{index}].encrypted_content",
                                     code="invalid_encrypted_content") from None
        resolved.append(item)
    return read_input_files(tenant, resolved)


def _check_container_files(tenant: Tenant, params: ResponseParams) -> None:
    """The files a code_interpreter tool's new container is to hold are the tenant's."""
    for index, tool in enumerate(params.tools):
        if isinstance(tool, CodeInterpreterTool) and tool.file_ids:
            check_file_ids(tenant, list(tool.file_ids), f"tools[{index}].container.file_ids")


def _check_vector_stores(tenant: Tenant, params: ResponseParams) -> None:
    """The stores a file_search tool searches are the tenant's (404 otherwise) and not expired."""
    for index, tool in enumerate(params.tools):
        if isinstance(tool, FileSearchTool):
            usable_stores(tenant, tool.vector_store_ids, f"tools[{index}].vector_store_ids")


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
