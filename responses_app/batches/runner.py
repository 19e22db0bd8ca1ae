"""A batch's life on the workers: validation of its input file, then its requests started
as responses a few at a time (at the broker's lowest priority, within the model's share of
BATCH_MAX_IN_FLIGHT), refilled as they end, and the end: expiry, cancel, the output files.

Every step is idempotent and starts from the rows: a lost task message, a worker killed
mid-step or a restart only delays a batch until beat's tick (advance_batches) takes it up.
A request is started in the transaction that creates its response, so it runs once."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from responses_app.batches import results
from responses_app.batches.endpoints import parse_line
from responses_app.batches.input_file import batch_lines, check_input_file
from responses_app.files import store as files
from responses_app.models import (
    ACTIVE_STATUSES,
    Batch,
    BatchRequest,
    BatchRequestState,
    BatchStatus,
    Response,
    StoredFile,
)
from responses_app.services.cancel import request_cancel
from responses_app.services.create import create_response
from responses_app.webhooks import outbox
from responses_app.wire.errors import APIError

log = logging.getLogger(__name__)
INSERT_CHUNK = 1000
# A batch still "validating" this long after its create lost its validation (a worker
# killed, a lost message): beat's tick validates it again.
VALIDATION_STALLED_AFTER = timedelta(minutes=10)


# --- validation --------------------------------------------------------------------------------


def validate_batch(batch_id: str) -> None:
    """Check the input file; store its requests and start the batch, or fail it with the errors."""
    batch = Batch.objects.select_related("tenant").filter(pk=batch_id, status=BatchStatus.VALIDATING).first()
    if batch is None:
        return
    input_file = StoredFile.objects.filter(tenant=batch.tenant, pk=batch.input_file_id).first()
    if input_file is None:
        _fail(batch, [{"code": "file_not_found", "line": None, "param": "input_file_id",
                       "message": f"The input file {batch.input_file_id} was deleted before it was read."}])
        return
    with files.open_content(input_file) as content:
        checked = check_input_file(content, batch.endpoint)
    errors = checked.errors or _over_queue_limit(batch, checked.requests)
    if errors:
        _fail(batch, errors)
        return
    # Inserted in chunks (one long transaction would hold SQLite's only write lock); a
    # validation that died midway left rows that this one replaces.
    BatchRequest.objects.filter(batch=batch).delete()
    with files.open_content(input_file) as content:
        chunk: list[BatchRequest] = []
        for line in batch_lines(content):
            chunk.append(BatchRequest(batch=batch, line=line.line, custom_id=line.custom_id, body=line.body))
            if len(chunk) == INSERT_CHUNK:
                BatchRequest.objects.bulk_create(chunk)
                chunk = []
        BatchRequest.objects.bulk_create(chunk)
    # Marked advanced as it starts: beat's tick takes up a batch that never advanced, and
    # would otherwise race the advance just below for it.
    now = timezone.now()
    started = Batch.objects.filter(pk=batch.pk, status=BatchStatus.VALIDATING).update(
        status=BatchStatus.IN_PROGRESS, in_progress_at=now, advanced_at=now, total=checked.requests,
        model=checked.model)
    if started:
        advance_batch(batch.pk)


def _over_queue_limit(batch: Batch, requests: int) -> list[dict]:
    limit = batch.tenant.max_queued_batch_requests
    limit = settings.BATCH_MAX_QUEUED_REQUESTS if limit is None else limit
    queued = BatchRequest.objects.filter(batch__tenant=batch.tenant, state__in=(
        BatchRequestState.QUEUED, BatchRequestState.RUNNING)).exclude(batch=batch).count()
    if queued + requests <= limit:
        return []
    return [{"code": "batch_queue_limit_exceeded", "line": None, "param": None,
             "message": f"This batch's {requests} requests and the {queued} of this organization's batches not yet "
                        f"ended would pass its limit of {limit} queued batch requests."}]


def _fail(batch: Batch, errors: list[dict]) -> None:
    with transaction.atomic():
        failed = Batch.objects.filter(pk=batch.pk, status=BatchStatus.VALIDATING).update(
            status=BatchStatus.FAILED, failed_at=timezone.now(), errors=errors)
        if failed:
            outbox.batch_ended(Batch.objects.get(pk=batch.pk))


# --- running -----------------------------------------------------------------------------------


def advance_batch(batch_id: str) -> None:
    """The batch's next step: expire it at the end of its window, start requests into free
    slots, and finalize it once no request waits or runs."""
    batch = Batch.objects.filter(pk=batch_id).first()
    if batch is None or batch.is_terminal or batch.status == BatchStatus.VALIDATING:
        return
    Batch.objects.filter(pk=batch_id).update(advanced_at=timezone.now())
    if batch.status == BatchStatus.IN_PROGRESS and timezone.now() >= batch.expires_at:
        stop_batch(batch, expired=True)
    elif batch.status == BatchStatus.IN_PROGRESS:
        _start_requests(batch)
    else:  # a lost request put back in the queue as the batch was being stopped
        _end_waiting(batch)
    if not BatchRequest.objects.filter(batch_id=batch_id, state__in=(
            BatchRequestState.QUEUED, BatchRequestState.RUNNING)).exists():
        _finalize(batch_id)


def advance_batches() -> int:
    """Beat's tick: advance the batches that have not advanced for BATCH_STALL_S, and
    validate again the ones whose validation stalled."""
    now = timezone.now()
    for batch_id in Batch.objects.filter(status=BatchStatus.VALIDATING,
                                         created_at__lt=now - VALIDATION_STALLED_AFTER).values_list("pk", flat=True):
        validate_batch(batch_id)
    quiet_since = now - timedelta(seconds=settings.BATCH_STALL_S)
    active = list(Batch.objects.filter(
        Q(advanced_at__isnull=True) | Q(advanced_at__lt=quiet_since),
        status__in=(BatchStatus.IN_PROGRESS, BatchStatus.FINALIZING, BatchStatus.CANCELLING),
    ).values_list("pk", flat=True))
    for batch_id in active:
        try:
            advance_batch(batch_id)
        except Exception:
            log.exception("could not advance batch %s", batch_id)
    return len(active)


def _start_requests(batch: Batch) -> None:
    with transaction.atomic():
        batch = Batch.objects.select_for_update().select_related("tenant").get(pk=batch.pk)
        if batch.status != BatchStatus.IN_PROGRESS:
            return
        slots = _free_slots(batch)
        if slots <= 0:
            return
        for request in BatchRequest.objects.filter(batch=batch, state=BatchRequestState.QUEUED).order_by("line")[
                :slots]:
            _start(batch, request)


def _free_slots(batch: Batch) -> int:
    """The requests this batch may start now: the model's BATCH_MAX_IN_FLIGHT is shared by its
    batches in progress, and batch responses never take more of it."""
    cap = settings.BATCH_MAX_IN_FLIGHT
    # By the batches that may have requests running (a few rows), then the (batch, state)
    # index: a join from the requests' side read every request row, 50,000 in a big batch.
    unended = dict(Batch.objects.filter(model=batch.model, status__in=(
        BatchStatus.IN_PROGRESS, BatchStatus.CANCELLING, BatchStatus.FINALIZING)).values_list("pk", "status"))
    running = BatchRequest.objects.filter(batch_id__in=list(unended), state=BatchRequestState.RUNNING)
    share = max(1, cap // max(1, list(unended.values()).count(BatchStatus.IN_PROGRESS)))
    return min(cap - running.count(), share - running.filter(batch=batch).count())


def _start(batch: Batch, request: BatchRequest) -> None:
    """Create the request's response (sent to its model's queue once this commits), or record
    why it could not be created: the error file gives the status and body a create got."""
    try:
        line = parse_line(batch.endpoint, request.body)
        try:
            with transaction.atomic():
                response = create_response(batch.tenant, replace(line.create, background=True, batch_id=batch.pk))
        except APIError as error:
            raise line.renamed(error) from None
    except APIError as error:
        BatchRequest.objects.filter(pk=request.pk).update(
            state=BatchRequestState.FAILED, error={"status_code": error.status_code, "body": error.body()})
        Batch.objects.filter(pk=batch.pk).update(failed=F("failed") + 1)
        return
    BatchRequest.objects.filter(pk=request.pk).update(
        state=BatchRequestState.RUNNING, response_id=response.pk, attempts=F("attempts") + 1)


# --- the end -----------------------------------------------------------------------------------


def stop_batch(batch: Batch, *, expired: bool) -> None:
    """Cancel (client.batches.cancel) or expire a batch: its waiting requests end at once,
    its running responses are cancelled, and it is finalized once they have ended."""
    now = timezone.now()
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch.pk)
        if batch.is_terminal or batch.status in (BatchStatus.CANCELLING, BatchStatus.FINALIZING):
            return
        if expired:
            batch.status, batch.expired_at, batch.finalizing_at = BatchStatus.FINALIZING, now, now
        else:
            batch.status, batch.cancelling_at = BatchStatus.CANCELLING, now
        batch.save(update_fields=["status", "expired_at", "finalizing_at", "cancelling_at"])
        _end_waiting(batch)
    running = BatchRequest.objects.filter(batch=batch, state=BatchRequestState.RUNNING).values_list(
        "response_id", flat=True)
    for response in Response.objects.filter(pk__in=list(running), status__in=ACTIVE_STATUSES):
        request_cancel(response)


def _end_waiting(batch: Batch) -> None:
    """A stopped batch's waiting requests end as it did: expired or cancelled."""
    BatchRequest.objects.filter(batch=batch, state=BatchRequestState.QUEUED).update(
        state=BatchRequestState.EXPIRED if batch.expired_at else BatchRequestState.CANCELLED)


def _finalize(batch_id: str) -> None:
    """Write the output and error files, then end the batch (its webhook with it). Files
    written by a finalize that lost the race to another are deleted."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update().select_related("tenant").get(pk=batch_id)
        if batch.is_terminal:
            return
        if batch.status == BatchStatus.IN_PROGRESS:
            batch.status, batch.finalizing_at = BatchStatus.FINALIZING, timezone.now()
            batch.save(update_fields=["status", "finalizing_at"])
    written = results.write_results(batch)
    with transaction.atomic():
        locked = Batch.objects.select_for_update().get(pk=batch_id)
        if locked.is_terminal:
            transaction.on_commit(written.delete)
            return
        if locked.expired_at:
            locked.status = BatchStatus.EXPIRED
        elif locked.cancelling_at:
            locked.status, locked.cancelled_at = BatchStatus.CANCELLED, timezone.now()
        else:
            locked.status, locked.completed_at = BatchStatus.COMPLETED, timezone.now()
        locked.output_file_id, locked.error_file_id, locked.usage = written.output_id, written.error_id, written.usage
        locked.save()
        outbox.batch_ended(locked)
