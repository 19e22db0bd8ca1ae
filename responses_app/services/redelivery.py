"""No queued response is stranded by a lost message.

A queued response's message can be lost: the broker restarted without persistence or
failed over, its queue was purged, or the send itself failed (the broker was down when
the response was created). The row stays ``queued`` and says so. This sweep, run every
REDELIVERY_INTERVAL_S by beat, sends such responses again; a duplicate message is a
no-op, since only one claim of a queued row can win.

A response still waiting for a worker is told apart from a lost one by the queue's
depth: messages leave a queue in order, so while a waiting response's message is in the
queue, so are the messages of every response enqueued after it. When the queue holds
fewer messages than that, its message is gone, and it is sent again once it has waited
RESPONSE_RESEND_AFTER_S. A response whose model's queue no live worker consumes is
failed after RESPONSE_UNCLAIMED_FAIL_AFTER_S, with an error that says so (as /healthz
does).
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from responses_app.dispatch import broker
from responses_app.dispatch.task_queue import try_enqueue
from responses_app.models import ACTIVE_STATUSES, DeferredState, Response, ResponseStatus
from responses_app.services.ended import end_response

log = logging.getLogger(__name__)
# A response created this long ago that is not marked enqueued (its create's send failed
# and cleared the mark, or the reaper re-queued it and could not send) is enqueued by
# the sweep. A create marks its row enqueued in its own transaction, so one whose process
# died between the commit and the send looks sent: the queue-depth check below finds it.
ENQUEUE_GRACE_S = 2.0
# The sweep looks at this many waiting responses per model at most (the newest first).
MAX_WAITING = 10_000
# Responses that wait by design: deferred ones (dispatch/deferred.py), which the dispatcher sends
# and whose lost low-priority message is made good by their promotion, and a WebSocket
# lane's, sent when the response before them ends (sessions/lanes.py).
NOT_YET_DUE = (DeferredState.WAITING, DeferredState.RELEASED, DeferredState.LANE)


def redeliver_unclaimed() -> dict[str, int]:
    now = timezone.now()
    counts = {"enqueued": 0, "resent": 0, "failed": 0}
    for response in _never_sent(now):
        counts["enqueued"] += try_enqueue(response)
    for queue, models in _models_by_queue().items():
        counts["failed"] += _fail_unserved(models, queue, now)
        counts["resent"] += _resend_lost(models, queue, now)
    if any(counts.values()):
        log.warning("redelivery: %s", counts)
    return counts


def _models_by_queue() -> dict[str, list[str]]:
    queues: dict[str, list[str]] = {}
    for model, entry in settings.MODEL_REGISTRY.items():
        queues.setdefault(entry["queue"], []).append(model)
    return queues


def _never_sent(now: datetime) -> list[Response]:
    """Queued responses whose send failed: new ones after the grace (their create's own
    send may be under way), and at once those the reaper re-queued (attempts > 0)."""
    grace = now - timedelta(seconds=ENQUEUE_GRACE_S)
    return list(Response.objects.filter(status=ResponseStatus.QUEUED, enqueued_at__isnull=True)
                .exclude(deferred_state=DeferredState.WAITING)
                # A lane's response waits for the one before it; once that one has ended it
                # is due (its release is sent where that one ended; this is the safety net).
                .exclude(deferred_state=DeferredState.LANE, lane_after__status__in=ACTIVE_STATUSES)
                .filter(Q(attempts__gt=0) | Q(created_at__lt=grace)).only("id", "model", "batch_id"))


def _resend_lost(models: list[str], queue: str, now: datetime) -> int:
    waiting = list(Response.objects.filter(status=ResponseStatus.QUEUED, model__in=models, enqueued_at__isnull=False)
                   .exclude(deferred_state__in=NOT_YET_DUE).order_by("-enqueued_at", "-created_at")
                   .only("id", "model", "enqueued_at", "batch_id")[:MAX_WAITING])
    cutoff = now - timedelta(seconds=settings.RESPONSE_RESEND_AFTER_S)
    if not any(response.enqueued_at < cutoff for response in waiting):
        return 0
    try:
        depth = broker.queue_depths([queue])[queue]
    except Exception as error:  # the broker is down: nothing can be sent anyway
        log.warning("redelivery: the depth of %s is unknown: %s", queue, error)
        return 0
    # Newest first: the response at position i needs i + 1 messages in the queue, its own
    # and those enqueued after it.
    lost = [response for position, response in enumerate(waiting)
            if position + 1 > depth and response.enqueued_at < cutoff]
    # Oldest first, so that the queue keeps the order in which they were created.
    return sum(try_enqueue(response) for response in reversed(lost))


def _fail_unserved(models: list[str], queue: str, now: datetime) -> int:
    cutoff = now - timedelta(seconds=settings.RESPONSE_UNCLAIMED_FAIL_AFTER_S)
    stranded = list(Response.objects.filter(status=ResponseStatus.QUEUED, model__in=models, created_at__lt=cutoff)
                    .exclude(deferred_state__in=NOT_YET_DUE).values_list("id", "model"))
    if not stranded:
        return 0
    try:
        if broker.queue_consumed(queue):
            return 0  # workers are there, only busy: the responses wait their turn
    except Exception as error:
        log.warning("redelivery: who consumes %s is unknown: %s", queue, error)
        return 0
    failed = 0
    for response_id, model in stranded:
        failure = {
            "code": "server_error",
            "message": f"No worker serves model '{model}' (queue '{queue}'): the response was not started "
                       f"within {settings.RESPONSE_UNCLAIMED_FAIL_AFTER_S:g} s.",
        }
        failed += end_response(response_id, ResponseStatus.FAILED, error=failure, only_if_status=ResponseStatus.QUEUED)
    return failed
