"""The database side of a Responses WebSocket session: which responses a socket follows,
what a reconnecting socket resumes, and the mark a socket leaves when it goes away.

A session is named by the client (``?session=`` on the socket URL, which the SDK sends
again on each reconnect) or, unnamed, is the socket itself. Its responses carry the
session, their lane (``stream_id``) and the socket following them (``socket_id``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from responses_app.lib.redis_client import shared_client
from responses_app.models import ACTIVE_STATUSES, Response, Tenant


def presence_key(tenant_id: int, session: str) -> str:
    """The Redis sorted set of a session's live sockets (api/websocket/presence.py)."""
    return f"responses:ws:live:{tenant_id}:{session}"


def is_live(tenant_id: int, session: str) -> bool:
    """Whether a socket of the session is open now; True when Redis cannot say, so that
    what a live socket may still need is kept."""
    try:
        return shared_client().zcount(presence_key(tenant_id, session), time.time(), "+inf") > 0
    except Exception:  # noqa: BLE001  (Redis down: keep)
        return True


@dataclass(frozen=True)
class LaneStart:
    """Where a resumed lane starts: the first of its responses the client has not seen
    whole; the lane follows the responses after it from there."""

    stream_id: str
    response_id: str


def resume(tenant: Tenant, session: str, socket_id: str, seen: dict[str, int]) -> list[LaneStart]:
    """Attach the session's running responses to ``socket_id`` and return where each lane
    starts again. ``seen``: the last sequence number the client saw (or was sent) of
    responses of this session; a lane starts at the earliest response in it that is
    running or named there, so that the ones after it, even those that ended while no
    socket was attached, are delivered too."""
    with transaction.atomic():
        mine = Response.objects.filter(tenant=tenant, socket_session=session)
        active = mine.filter(status__in=ACTIVE_STATUSES)
        active.update(socket_id=socket_id, detached_at=None)
        candidates = {pk: (stream_id, after) for pk, stream_id, after in
                      (active | mine.filter(pk__in=list(seen))).values_list("pk", "stream_id", "lane_after_id")}
    ordered = Response.objects.filter(pk__in=list(candidates)).order_by("created_at").values_list("pk", flat=True)
    return [LaneStart(candidates[pk][0], pk) for pk in ordered if candidates[pk][1] not in candidates]


def detach(tenant: Tenant, session: str) -> None:
    """The session's last socket went away: its running responses wait WS_RESUME_GRACE_S
    for another socket of the session (services/recovery.cancel_detached cancels the foreground ones)."""
    Response.objects.filter(tenant=tenant, socket_session=session, status__in=ACTIVE_STATUSES).update(
        detached_at=timezone.now())
