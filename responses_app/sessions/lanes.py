"""WebSocket lanes: the responses of one lane (socket session + ``stream_id``) run one
after another, each stored behind the one before it (``lane_after``, deferred_state
"lane") and sent to the broker when that one ends.

``response_ended`` runs inside services/ended.end_response's transaction, for every way a response
ends: its lane's next response is released (sent once the end commits), and steering
input still queued for it (nobody committed it to a successor) fails, so that the
socket can hand it back.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import Exists, OuterRef

from responses_app.dispatch.task_queue import try_enqueue
from responses_app.models import ACTIVE_STATUSES, DeferredState, Response, ResponseSteer, SteerState

NOT_ACTIVE = "response_not_active"


def response_ended(response: Response) -> None:
    """Inside the terminal transaction of ``response``."""
    if not response.socket_session:
        return  # made over HTTP: no lane, and no steering input (only a socket session steers)
    ResponseSteer.objects.filter(response_id=response.pk, state=SteerState.QUEUED).update(
        state=SteerState.FAILED, error_code=NOT_ACTIVE,
        error_message=f"The response ended {response.status} before the steering input could be committed.")
    released = list(Response.objects.filter(lane_after_id=response.pk, deferred_state=DeferredState.LANE,
                                            status__in=ACTIVE_STATUSES))
    if not released:
        return
    Response.objects.filter(pk__in=[r.pk for r in released]).update(deferred_state="")
    transaction.on_commit(lambda: [try_enqueue(r) for r in released])


def lane_waits(tenant_id: int, socket_session: str, stream_id: str) -> Response | None:
    """The active response at the end of the lane (no active response runs after it),
    locked: end_response locks it too, so it either ends before this returns or sees the
    new response behind it. None when the lane is idle."""
    behind = Response.objects.filter(lane_after=OuterRef("pk"), status__in=ACTIVE_STATUSES)
    return (Response.objects.select_for_update()
            .filter(tenant_id=tenant_id, socket_session=socket_session, stream_id=stream_id,
                    status__in=ACTIVE_STATUSES)
            .exclude(Exists(behind)).order_by("-created_at").first())


def next_on_lane(response_id: str) -> str | None:
    """The response that runs after this one on its lane, if any (in the order the
    lane's responses run: a steered successor before what was queued behind its parent)."""
    return Response.objects.filter(lane_after_id=response_id).order_by("created_at").values_list(
        "pk", flat=True).first()

