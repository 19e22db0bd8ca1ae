"""A batch's slots: a batch request's end is recorded where its response ends
(services/ended.end_response), in the same transaction, so that a request is never counted
twice nor lost, whoever ends its response (the worker, the reaper, a cancel); then its batch
is advanced (batches/runner.py, on a worker): the next request takes the freed slot."""

from __future__ import annotations

from celery import current_app
from django.conf import settings
from django.db import transaction
from django.db.models import F

from responses_app.models import Batch, BatchRequest, BatchRequestState, BatchStatus, Response, ResponseStatus

# By name: the task's module imports the runner, which creates responses through the services.
VALIDATE_BATCH_TASK = "responses_app.tasks.validate_batch"
ADVANCE_BATCH_TASK = "responses_app.tasks.advance_batch"

_REQUEST_STATE = {
    ResponseStatus.COMPLETED: BatchRequestState.COMPLETED,
    ResponseStatus.INCOMPLETE: BatchRequestState.COMPLETED,  # a 200 with status incomplete, as OpenAI's
    ResponseStatus.FAILED: BatchRequestState.FAILED,
    ResponseStatus.CANCELLED: BatchRequestState.CANCELLED,
}


def response_ended(response: Response) -> None:
    if not response.batch_id:
        return
    running = BatchRequest.objects.filter(response_id=response.pk, state=BatchRequestState.RUNNING)
    rerun = _lost(response) and running.filter(
        attempts__lt=settings.BATCH_REQUEST_MAX_ATTEMPTS, batch__status=BatchStatus.IN_PROGRESS,
    ).update(state=BatchRequestState.QUEUED, response_id="")
    if not rerun:
        state = _REQUEST_STATE[response.status]
        counter = {BatchRequestState.COMPLETED: "completed", BatchRequestState.FAILED: "failed"}.get(state)
        if running.update(state=state) and counter:
            Batch.objects.filter(pk=response.batch_id).update(**{counter: F(counter) + 1})
    batch_id = response.batch_id
    transaction.on_commit(lambda: send_batch_task(ADVANCE_BATCH_TASK, batch_id))


def _lost(response: Response) -> bool:
    """A response that failed on the server's side (its worker killed mid-answer, an engine
    fault), not because of its request: the request deserves another response."""
    return response.status == ResponseStatus.FAILED and (response.error or {}).get("code") == "server_error"


def send_batch_task(task: str, batch_id: str) -> None:
    """Ask a worker to validate or advance the batch; if the broker is down, beat's tick
    (advance_batches) does it later."""
    try:
        current_app.send_task(task, args=[batch_id])
    except Exception:  # noqa: BLE001 - any broker failure; the tick covers it
        pass
