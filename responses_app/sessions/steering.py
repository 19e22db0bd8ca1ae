"""Steering a response over the Responses WebSocket (``response.steer``).

Accepted input is a ResponseSteer row, written with the response's ``steer_requested``
flag under the response's row lock, so the server owns it from the acceptance on: a
worker or web restart loses nothing. The worker's cancel watch sees the flag and ends
the response ``incomplete`` (reason ``steered``) after its next reasoning item; in that
terminal transaction the services commit the queued input to a successor
(services/steered.continue_steered), keep it pending while the response waits for client-owned
tool output (the explicit create that follows takes it: ``take_pending``), or fail it
(lanes.response_ended). The socket reports each outcome after the response's terminal
event (``outcomes``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from responses_app.harmony.client_tools import CALL_OUTPUTS
from responses_app.models import Response, ResponseSteer, SteerState, Tenant
from responses_app.selectors import output_items

# The client's calls that the SDK's ResponseSteerRequiredInput names by call_id alone (a
# function call's stub also names the function; it has none for local_shell).
REQUIRED_OUTPUTS = {call: output for call, output in CALL_OUTPUTS.items()
                    if call not in ("function_call", "local_shell_call")}


class SteerRefused(Exception):
    """A steer that cannot be accepted; ``code`` is one of the SDK's ResponseSteerErrorCode."""

    def __init__(self, code: str, message: str, response: Response | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.response = response  # the target, when it exists on this connection


def accept_steer(tenant: Tenant, socket_session: str, response_id: str, raw_input: Any,
                 input_items: list[dict[str, Any]]) -> ResponseSteer:
    """Queue validated input for a response of this socket session. Raises SteerRefused."""
    with transaction.atomic():
        # The row lock orders this against end_response: either the response is still
        # running and its end sees the queued input, or it has ended and the steer is refused.
        response = Response.objects.select_for_update().filter(
            tenant=tenant, pk=response_id, socket_session=socket_session).first()
        if response is None:
            raise SteerRefused("response_not_found",
                               f"No response with id '{response_id}' was created on this connection.")
        if response.is_terminal:
            raise SteerRefused("response_already_completed",
                               f"Response '{response_id}' has already ended ({response.status}).", response)
        queued = ResponseSteer.objects.filter(response=response, state=SteerState.QUEUED).count()
        if queued >= settings.WS_MAX_PENDING_STEERS:
            raise SteerRefused("too_many_pending_steers",
                               f"Response '{response_id}' already has {queued} steering inputs queued.", response)
        steer = ResponseSteer.objects.create(tenant=tenant, response=response, input=raw_input,
                                             input_items=input_items)
        Response.objects.filter(pk=response.pk).update(steer_requested=True)
    steer.response = response
    return steer


def required_input(response: Response) -> list[dict[str, Any]]:
    """Stubs of the client-owned results the response stopped for (the SDK's
    ResponseSteerRequiredInput): the outputs of the client's tools and MCP approvals."""
    stubs = []
    for item in output_items(response):
        if item["type"] == "function_call":
            stubs.append({"type": "function_call_output", "call_id": item["call_id"], "name": item["name"]})
        elif item["type"] in REQUIRED_OUTPUTS:
            stubs.append({"type": REQUIRED_OUTPUTS[item["type"]], "call_id": item["call_id"]})
        elif item["type"] == "mcp_approval_request":
            stubs.append({"type": "mcp_approval_response", "approval_request_id": item["id"]})
    return stubs


def queued_input(response: Response) -> list[ResponseSteer]:
    return list(ResponseSteer.objects.filter(response=response, state=SteerState.QUEUED))


def pending_input(previous: Response) -> list[ResponseSteer]:
    """The input that waits for the explicit continuation of ``previous``."""
    return list(ResponseSteer.objects.filter(response=previous, state=SteerState.PENDING))


def commit(steers: list[ResponseSteer], successor: Response, from_state: str) -> None:
    """Mark the steers as the input of ``successor`` (inside the caller's transaction)."""
    ResponseSteer.objects.filter(pk__in=[steer.pk for steer in steers], state=from_state).update(
        state=SteerState.COMMITTED, successor=successor)


@dataclass(frozen=True)
class Outcome:
    """What the socket tells the client about one steer after the response ended."""

    steer: ResponseSteer
    required_input: list[dict[str, Any]]


def outcomes(response: Response) -> list[Outcome]:
    """The pending and failed steers of an ended response, in submission order (committed
    ones need no word: the successor's response.created is their commit point)."""
    steers = list(ResponseSteer.objects.filter(response=response,
                                               state__in=(SteerState.PENDING, SteerState.FAILED)))
    stubs = required_input(response) if any(s.state == SteerState.PENDING for s in steers) else []
    return [Outcome(steer, stubs if steer.state == SteerState.PENDING else []) for steer in steers]
