"""The successor of a steered response: the steering input queued for it, continued from it."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Subquery

from responses_app.models import Response, ResponseStatus, ResponseSteer, SteerState
from responses_app.services.create import create_response
from responses_app.sessions import steering
from responses_app.validation.request import CreateRequest
from responses_app.wire.errors import APIError


def continue_steered(response: Response) -> None:
    """After ``response`` ended, in its terminal transaction (services/ended.py): the
    steering input queued for it becomes the input of a successor that inherits its
    settings, continues from it and runs next on its lane; or stays pending while the
    response waits for client-owned tool output or approval. Input left queued (the
    response failed or was cancelled, or the successor could not be created) fails in
    lanes.response_ended."""
    if response.status not in (ResponseStatus.COMPLETED, ResponseStatus.INCOMPLETE):
        return
    if not response.steer_requested:
        # Steering input is written with the flag, under the row lock that the terminal
        # write holds (sessions/steering.py): without it there is none, and no query.
        return
    steers = steering.queued_input(response)
    if not steers:
        return
    if steering.required_input(response):
        ResponseSteer.objects.filter(pk__in=[s.pk for s in steers]).update(state=SteerState.PENDING)
        return
    request = CreateRequest(
        model=response.model, input_items=[item for steer in steers for item in steer.input_items], stream=True,
        background=response.background, store=response.store, previous_response_id=response.pk,
        params=response.params, socket_session=response.socket_session, stream_id=response.stream_id,
        socket_id=response.socket_id, joins_lane=False)
    try:
        with transaction.atomic():  # a savepoint: a refused successor leaves the end intact
            successor = create_response(response.tenant, request)
            steering.commit(steers, successor, SteerState.QUEUED)
            # It runs next on the lane (sent at once: the steered response is over), before
            # whatever the client queued behind that one, and is as detached as its parent.
            Response.objects.filter(lane_after_id=response.pk).update(lane_after=successor)
            Response.objects.filter(pk=successor.pk).update(lane_after=response, detached_at=Subquery(
                Response.objects.filter(pk=response.pk).values("detached_at")))
    except APIError as error:
        ResponseSteer.objects.filter(pk__in=[s.pk for s in steers]).update(
            state=SteerState.FAILED, error_code="successor_creation_failed", error_message=error.message)
