"""Taking a queued response: a compare-and-set claim that makes one worker its writer, under
a lease that the worker renews with every batch (stream/store.py) and the reaper recovers
when it expires (services/recovery.reap_expired_leases)."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.db.models.functions import Coalesce
from django.utils import timezone

from responses_app.models import Response, ResponseStatus


def worker_identity() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{threading.get_ident()}:{uuid.uuid4().hex[:8]}"


def claim(response_id: str, owner: str) -> Response | None:
    """Compare-and-set queued -> in_progress; None if cancelled or taken by another worker."""
    now = timezone.now()
    claimed = Response.objects.filter(pk=response_id, status=ResponseStatus.QUEUED, cancel_requested=False).update(
        status=ResponseStatus.IN_PROGRESS,
        lease_owner=owner,
        lease_expires_at=now + timedelta(seconds=settings.LEASE_TTL_S),
        attempts=F("attempts") + 1,
        started_at=Coalesce(F("started_at"), now),
    )
    return Response.objects.select_related("tenant").get(pk=response_id) if claimed else None
