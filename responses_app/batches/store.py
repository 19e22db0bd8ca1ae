"""Batches as the API serves them: create, retrieve, list, cancel (client.batches)."""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction

from responses_app.batches.requests import BatchCreate
from responses_app.batches.runner import stop_batch
from responses_app.dispatch.batch_slots import ADVANCE_BATCH_TASK, VALIDATE_BATCH_TASK, send_batch_task
from responses_app.files import store as files
from responses_app.lib.keyset import created_at_page
from responses_app.models import Batch, FilePurpose, Tenant
from responses_app.wire.errors import InvalidRequest, NotFound, or_not_found


def create_batch(tenant: Tenant, request: BatchCreate) -> Batch:
    """Store the batch ``validating``; a worker reads its input file once this commits."""
    try:
        input_file = files.get_file(tenant, request.input_file_id)
    except NotFound:
        raise NotFound(f"No such File object: {request.input_file_id}", param="input_file_id") from None
    if input_file.purpose != FilePurpose.BATCH:
        raise InvalidRequest(f"The input file must have purpose 'batch'; {input_file.pk} has purpose "
                             f"{input_file.purpose!r}.", param="input_file_id", code="invalid_file_purpose")
    batch = Batch(tenant=tenant, endpoint=request.endpoint, input_file_id=input_file.pk, completion_window="24h",
                  metadata=request.metadata, output_expires_after_s=request.output_expires_after_s)
    batch.expires_at = batch.created_at + timedelta(seconds=settings.BATCH_COMPLETION_WINDOW_S)
    with transaction.atomic():
        batch.save(force_insert=True)
        transaction.on_commit(lambda: send_batch_task(VALIDATE_BATCH_TASK, batch.pk))
    return batch


def get_batch(tenant: Tenant, batch_id: str) -> Batch:
    return or_not_found(Batch.objects.filter(tenant=tenant, pk=batch_id).first(),
                        f"No batch found with id '{batch_id}'.", "batch_id")


def batches_page(tenant: Tenant, *, after: str | None, limit: int) -> tuple[list[Batch], bool]:
    """A page of the tenant's batches, newest first (as OpenAI lists them)."""
    return created_at_page(Batch.objects.filter(tenant=tenant), after=after, limit=limit, order="desc",
                           missing=lambda cursor, param: InvalidRequest(f"No batch '{cursor}' to list after.",
                                                                        param=param))


def cancel_batch(tenant: Tenant, batch_id: str) -> Batch:
    """Cancel a batch that has not ended: ``cancelling`` until its running responses have
    ended, then ``cancelled`` with the files of what ended before. An ended batch is
    returned unchanged."""
    batch = get_batch(tenant, batch_id)
    stop_batch(batch, expired=False)
    send_batch_task(ADVANCE_BATCH_TASK, batch.pk)
    batch.refresh_from_db()
    return batch
