"""Cancel, re-run and delete."""

from __future__ import annotations

from django.db import transaction

from responses_app.models import (
    TERMINAL_STATUSES,
    Response,
    ResponseStatus,
)
from responses_app.selectors import input_items
from responses_app.services.create import create_response
from responses_app.services.ended import end_response
from responses_app.stream import doorbell
from responses_app.validation.request import CreateRequest


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
                            store=True, previous_response_id=original.previous_response_id, params=original.params)
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
        end_response(response_id, ResponseStatus.CANCELLED, deleted_with_it=True)
        # Lock the row: a worker's batch starts by updating it, so no item or event can be
        # inserted between collecting the related rows and deleting them.
        Response.objects.select_for_update().filter(pk=response_id).first()
        response.delete()
    doorbell.ring(response_id, -1)  # wakes its readers, who find it gone and end
