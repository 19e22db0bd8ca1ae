"""Deferred completion windows: background_options.completion_window "2h" and "8h".

A deferred response is created ``waiting``: stored, not sent. The dispatcher (beat,
every DEFERRED_DISPATCH_INTERVAL_S) releases the waiting ones to their model's queue in
the order of their deadlines at the broker's lowest priority, so a worker takes one only
when no interactive message waits in any queue it consumes; it keeps at most
DEFERRED_RELEASED_AHEAD of them per model in the broker, so that one released later with
an earlier deadline is not far behind. A response whose deadline is less than
DEFERRED_PROMOTE_BEFORE_S away is promoted: sent again at the interactive priority (a
low-priority message still in the queue becomes a no-op claim), so that it is served
like an interactive response and finishes inside its window.

A continuation_id groups a tenant's deferred responses: they run one after another in
the order of their creation. A group's next response is released once the previous one
has ended, with the earliest deadline of the group's waiting responses, so that the
wait of the first never makes a later one miss its deadline.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

from responses_app.dispatch.task_queue import DEFERRED_PRIORITY, INTERACTIVE_PRIORITY, try_enqueue
from responses_app.models import ACTIVE_STATUSES, DeferredState, Response, ResponseStatus

log = logging.getLogger(__name__)
DEFERRED_RELEASED_AHEAD = 16
# The dispatcher looks at this many waiting responses per pass at most (the nearest deadlines).
MAX_WAITING = 10_000


def dispatch_deferred(now: datetime | None = None) -> dict[str, int]:
    now = now or timezone.now()
    counts = {"released": 0, "promoted": 0}
    promote_at = now + timedelta(seconds=settings.DEFERRED_PROMOTE_BEFORE_S)
    for response in Response.objects.filter(deferred_state=DeferredState.RELEASED, status=ResponseStatus.QUEUED,
                                            deadline_at__lte=promote_at):
        counts["promoted"] += _promote(response)
    ahead = _released_by_model()
    for response, deadline in _heads():
        if deadline <= promote_at:
            counts["promoted"] += _promote(response)
        elif ahead.get(response.model, 0) < DEFERRED_RELEASED_AHEAD:
            if try_enqueue(response, DEFERRED_PRIORITY, deferred_state=DeferredState.RELEASED):
                ahead[response.model] = ahead.get(response.model, 0) + 1
                counts["released"] += 1
    if any(counts.values()):
        log.info("deferred responses: %s", counts)
    return counts


def _promote(response: Response) -> bool:
    return try_enqueue(response, INTERACTIVE_PRIORITY, deferred_state=DeferredState.PROMOTED)


def _released_by_model() -> dict[str, int]:
    counts: dict[str, int] = {}
    for model in Response.objects.filter(deferred_state=DeferredState.RELEASED,
                                         status=ResponseStatus.QUEUED).values_list("model", flat=True):
        counts[model] = counts.get(model, 0) + 1
    return counts


def _heads() -> list[tuple[Response, datetime]]:
    """The waiting responses that may be released, each with the deadline it is released
    by, nearest first: a response without continuation_id, or the oldest waiting one of a
    group none of whose released members is still queued or running."""
    waiting = list(Response.objects.filter(deferred_state=DeferredState.WAITING, status=ResponseStatus.QUEUED)
                   .order_by("deadline_at")[:MAX_WAITING])
    heads: list[tuple[Response, datetime]] = []
    groups: dict[tuple[int, str], list[Response]] = {}
    for response in waiting:
        if response.continuation_id:
            groups.setdefault((response.tenant_id, response.continuation_id), []).append(response)
        else:
            heads.append((response, response.deadline_at))
    for (tenant_id, continuation_id), members in groups.items():
        busy = Response.objects.filter(status__in=ACTIVE_STATUSES, tenant_id=tenant_id,
                                       continuation_id=continuation_id).exclude(
            deferred_state=DeferredState.WAITING).exists()
        if not busy:
            first = min(members, key=lambda member: (member.created_at, member.pk))
            heads.append((first, min(member.deadline_at for member in members)))
    return sorted(heads, key=lambda head: head[1])
