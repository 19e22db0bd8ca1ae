"""What the beat tasks recover: responses whose worker vanished, foreground responses whose
WebSocket went away, and ended store=false responses."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import F, Q
from django.utils import timezone

from responses_app.dispatch.task_queue import try_enqueue
from responses_app.models import (
    ACTIVE_STATUSES,
    ANSWERED_STATUSES,
    BATCH_TERMINAL_STATUSES,
    TERMINAL_STATUSES,
    Batch,
    OutputItem,
    Response,
    ResponseStatus,
)
from responses_app.services.cancel import request_cancel
from responses_app.services.ended import end_response
from responses_app.sessions import sockets

log = logging.getLogger(__name__)


def reap_expired_leases() -> dict[str, int]:
    """Recover responses whose worker vanished (its lease expired). (Queued responses
    whose message was lost are services/redelivery.py's.)

    One that had emitted nothing beyond its lifecycle events is re-queued (the retry
    starts from scratch, RESPONSE_MAX_ATTEMPTS times at most); one that had written output
    is re-queued to be continued from its last committed event (worker/continuation.py),
    RESPONSE_MAX_RECOVERIES times at most. Past those, or with a cancel requested, it ends
    with a terminal event, so no response stays in_progress forever.
    """
    now = timezone.now()
    counts = {"requeued": 0, "continued": 0, "failed": 0}
    expired = Response.objects.filter(status=ResponseStatus.IN_PROGRESS, lease_expires_at__lt=now)
    for response in expired.only("id", "model", "attempts", "recoveries", "cancel_requested", "batch_id"):
        has_output = OutputItem.objects.filter(response_id=response.pk).exists()
        if not response.cancel_requested:
            if not has_output and response.attempts < settings.RESPONSE_MAX_ATTEMPTS:
                if _requeue(response, now):
                    counts["requeued"] += 1
                continue
            if has_output and response.recoveries < settings.RESPONSE_MAX_RECOVERIES:
                if _requeue(response, now, recoveries=F("recoveries") + 1):
                    counts["continued"] += 1
                continue
        status = ResponseStatus.CANCELLED if response.cancel_requested else ResponseStatus.FAILED
        error = None if response.cancel_requested else {"code": "server_error", "message": _lost_message(response)}
        if end_response(response.pk, status, error=error, only_if_lease_expired_before=now):
            counts["failed"] += 1
            log.warning("ended %s (%s) after its worker was lost", response.pk, status)
    return counts


def _requeue(response: Response, expired_before: datetime, **changes: Any) -> bool:
    """Queue the lost response again, for a worker to start (no output) or continue it."""
    requeued = Response.objects.filter(pk=response.pk, status=ResponseStatus.IN_PROGRESS,
                                       lease_expires_at__lt=expired_before).update(
        status=ResponseStatus.QUEUED, lease_owner="", lease_expires_at=None, enqueued_at=None, **changes)
    if requeued:
        log.warning("re-queued %s after its worker was lost", response.pk)
        try_enqueue(response)
    return bool(requeued)


def _lost_message(response: Response) -> str:
    if response.recoveries:
        return (f"The workers running this response stopped unexpectedly {response.recoveries + 1} times; it was "
                f"ended after {response.recoveries} continuations (RESPONSE_MAX_RECOVERIES).")
    return "The worker running this response stopped unexpectedly; the response was ended."


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
    those of a WebSocket session with a live socket (it may continue them), those of a
    batch that has not written its results yet (a chat completion's line is unstored) and
    the answered choices of a stored chat completion (retention deletes them, as stored
    responses; one whose client hung up, or that failed, is never found: it goes)."""
    cutoff = timezone.now() - timedelta(seconds=settings.UNSTORED_RETENTION_S)
    unended_batches = Batch.objects.exclude(status__in=BATCH_TERMINAL_STATUSES).values("pk")
    ended = Response.objects.filter(store=False, status__in=TERMINAL_STATUSES, completed_at__lt=cutoff)
    # By id: a JSON key that a row lacks is NULL, and an exclude on it would keep that row.
    stored_choices = ended.filter(request__chat__stored=True, status__in=ANSWERED_STATUSES).values("pk")
    ended = ended.exclude(batch_id__in=unended_batches).exclude(pk__in=stored_choices)
    sessions = set(ended.exclude(socket_session="").values_list("tenant_id", "socket_session").distinct())
    live = [Q(tenant_id=tenant_id, socket_session=session) for tenant_id, session in sessions
            if sockets.is_live(tenant_id, session)]
    for keep in live:
        ended = ended.exclude(keep)
    deleted: int = ended.delete()[0]
    return deleted
