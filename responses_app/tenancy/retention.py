"""Retention: stored responses are deleted a number of days after they end.

The number is the tenant's ``response_retention_days``, else RESPONSE_RETENTION_DAYS
(30, as OpenAI keeps responses); 0 keeps them forever. An expired response is not found
at once (``expired_before`` is applied by the reads), whenever the purge gets to it.

The purge, run by beat, walks each tenant's ended responses by end time through the
(tenant, completed_at) index and deletes them in batches of RETENTION_PURGE_BATCH, one
short transaction each, their items, events and packed log with them. It never deletes
a response that a queued or running one still reads: the whole previous_response_id
chain of every active response is kept until that response ends.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from responses_app.models import ACTIVE_STATUSES, TERMINAL_STATUSES, Response, Tenant

log = logging.getLogger(__name__)
# A chain longer than this is not walked further (a guard against a cycle of ids, which
# the API cannot create, but a restored or hand-edited database could hold).
MAX_CHAIN = 10_000


def retention_days(tenant: Tenant) -> float:
    days = tenant.response_retention_days
    return settings.RESPONSE_RETENTION_DAYS if days is None else days


def expired_before(tenant: Tenant, now: datetime | None = None) -> datetime | None:
    """Responses of ``tenant`` that ended before this time have expired (None: none expire)."""
    days = retention_days(tenant)
    if days <= 0:
        return None
    return (now or timezone.now()) - timedelta(days=days)


def unexpired(responses: QuerySet[Response], tenant: Tenant) -> QuerySet[Response]:
    """``responses`` (of ``tenant``) without those that have expired."""
    cutoff = expired_before(tenant)
    return responses if cutoff is None else responses.exclude(completed_at__lt=cutoff)


def purge_expired(now: datetime | None = None) -> int:
    """Delete every expired response; returns how many were deleted."""
    now = now or timezone.now()
    deleted = 0
    for tenant in Tenant.objects.all():
        cutoff = expired_before(tenant, now)
        if cutoff is not None:
            deleted += _purge_tenant(tenant, cutoff)
    if deleted:
        log.info("retention: deleted %d expired responses", deleted)
    return deleted


def _purge_tenant(tenant: Tenant, cutoff: datetime) -> int:
    deleted = 0
    while True:
        with transaction.atomic():
            # A create never names an expired response as its previous one (it is not
            # found: ``unexpired``), so responses created after this read cannot need it.
            kept = _read_by_active(tenant)
            batch = list(Response.objects.filter(tenant=tenant, completed_at__lt=cutoff,
                                                 status__in=TERMINAL_STATUSES)
                         .exclude(pk__in=kept).order_by("completed_at")
                         .values_list("pk", flat=True)[: settings.RETENTION_PURGE_BATCH])
            if batch:
                Response.objects.filter(pk__in=batch).delete()
        deleted += len(batch)
        if len(batch) < settings.RETENTION_PURGE_BATCH:
            return deleted


def _read_by_active(tenant: Tenant) -> set[str]:
    """Every response in the previous_response_id chain of a queued or running response."""
    kept: set[str] = set()
    active = Response.objects.filter(status__in=ACTIVE_STATUSES, tenant=tenant, previous_response_id__isnull=False)
    frontier = set(active.values_list("previous_response_id", flat=True))
    while frontier and len(kept) < MAX_CHAIN:
        kept |= frontier
        frontier = set(Response.objects.filter(pk__in=frontier, previous_response_id__isnull=False)
                       .values_list("previous_response_id", flat=True)) - kept
    return kept
