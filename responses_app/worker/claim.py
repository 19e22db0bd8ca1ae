"""Taking a queued response: a compare-and-set claim that makes one worker its writer, under
a lease that the worker renews with every batch (stream/store.py) and the reaper recovers
when it expires (services/recovery.reap_expired_leases).

A GPU node's task threads take a few hundred messages at once. Their claims are made in
groups: the first thread that claims leads, making one UPDATE and one SELECT for every
claim that waits; a claim that comes while those run waits for the next group, which one
of the waiting threads leads. One claim alone costs what it did (two statements).
"""

from __future__ import annotations

import os
import socket
import threading
import uuid
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.models import Case, CharField, F, Value, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from responses_app.models import Response, ResponseStatus


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


def claim(response_id: str, owner: str) -> Response | None:
    """Compare-and-set queued -> in_progress, leased to ``owner`` (unique to this claim);
    None if cancelled or taken by another worker."""
    if connections[DEFAULT_DB_ALIAS].in_atomic_block:
        # The caller's transaction holds rows that only its own connection sees.
        return claim_group({response_id: owner}).get(response_id)
    return _claims.claim(response_id, owner)


def claim_group(owners: dict[str, str]) -> dict[str, Response]:
    """Claim each response for its owner, in one UPDATE and one SELECT; returns the
    responses claimed (with their tenants), by id."""
    now = timezone.now()
    ids = list(owners)
    lease_owner = (Value(owners[ids[0]]) if len(ids) == 1 else
                   Case(*(When(pk=response_id, then=Value(owner)) for response_id, owner in owners.items()),
                        output_field=CharField()))
    claimed = Response.objects.filter(pk__in=ids, status=ResponseStatus.QUEUED, cancel_requested=False).update(
        status=ResponseStatus.IN_PROGRESS,
        lease_owner=lease_owner,
        node=settings.NODE_ID,
        lease_expires_at=now + timedelta(seconds=settings.LEASE_TTL_S),
        attempts=F("attempts") + 1,
        started_at=Coalesce(F("started_at"), now),
    )
    if not claimed:
        return {}
    # Owners are unique to their claim: a row with one is claimed by it.
    rows = Response.objects.select_related("tenant").filter(pk__in=ids, lease_owner__in=list(owners.values()))
    return {row.pk: row for row in rows if owners[row.pk] == row.lease_owner}


@dataclass(eq=False)
class _Claim:
    response_id: str
    owner: str
    wake: threading.Event = field(default_factory=threading.Event)
    leads: bool = False  # to lead the next group
    answered: bool = False
    response: Response | None = None
    error: BaseException | None = None


class _GroupedClaims:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[_Claim] = []
        self._leader = False

    def claim(self, response_id: str, owner: str) -> Response | None:
        mine = _Claim(response_id, owner)
        with self._lock:
            self._waiting.append(mine)
            if not self._leader:
                self._leader = mine.leads = True
        while True:
            if mine.leads:  # a leader is first of the waiting claims, so in its own group
                mine.leads = False
                self._lead()
            if mine.answered:
                break
            mine.wake.wait()
            mine.wake.clear()
        if mine.error is not None:
            raise mine.error
        return mine.response

    def _lead(self) -> None:
        """Claim every waiting claim in one group, then hand the lead to a claim that came
        meanwhile (each thread leads at most one group: it has a response to run)."""
        with self._lock:
            # A response delivered twice to this process: its second claim waits for the next group.
            group: dict[str, _Claim] = {}
            later = [one for one in self._waiting if group.setdefault(one.response_id, one) is not one]
            self._waiting = later
        try:
            claimed = claim_group({response_id: one.owner for response_id, one in group.items()})
        except Exception as error:  # the database down: each claim raises it, as alone
            claimed = {}
            for one in group.values():
                one.error = error
        for one in group.values():
            one.response, one.answered = claimed.get(one.response_id), True
            one.wake.set()
        with self._lock:
            if self._waiting:
                successor = self._waiting[0]
                successor.leads = True
                successor.wake.set()
            else:
                self._leader = False


_claims = _GroupedClaims()
