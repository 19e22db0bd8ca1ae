"""The one way a response ends, and what follows its end.

``end_response`` gives a response its terminal status (stream/store.write_terminal: the
terminal event and the row), then, in the same transaction and in this order:

1. usage: the tenant's daily usage counts the response's tokens (tenancy/daily_usage.py);
2. webhooks: its response.* event goes to the outbox of its tenant's endpoints
   (webhooks/outbox.py; delivered once the transaction commits);
3. the steered successor: steering input queued for it becomes the input of its
   successor, or waits for its client-owned output (services/steered.py);
4. lane release: the next response of its WebSocket lane is sent, and steering input
   still queued fails (sessions/lanes.py);
5. conversation append: its items join its conversation (conversations/turns.py);
6. batch request: a batch's request records its end and its batch is advanced
   (dispatch/batch_slots.py);

and once it commits, its event log is packed (stream/event_log.py). The worker, the
reaper, cancel, delete, redelivery and every test end a response through it, so every
end is followed by the same steps.
"""

from __future__ import annotations

from typing import Unpack

from django.db import transaction

from responses_app.conversations import turns
from responses_app.dispatch import batch_slots
from responses_app.models import Response, ResponseStatus, Tenant
from responses_app.services.create import create_response
from responses_app.services.steered import continue_steered
from responses_app.sessions import lanes
from responses_app.stream import event_log
from responses_app.stream.store import Terminal, write_terminal
from responses_app.tenancy.daily_usage import add_to_daily_usage
from responses_app.validation.request import CreateRequest
from responses_app.webhooks import outbox
from responses_app.wire.usage import Usage


def end_response(response_id: str, status: str, **terminal: Unpack[Terminal]) -> bool:
    """End the response (stream/store.write_terminal) and run what follows. Returns False,
    writing nothing, when the response is gone, already ended, or a guard does not hold."""
    with transaction.atomic():
        response = write_terminal(response_id, status, **terminal)
        if response is None:
            return False
        add_to_daily_usage(response.tenant_id, response.usage)
        outbox.response_ended(response)
        continue_steered(response)
        lanes.response_ended(response)
        turns.response_ended(response)
        batch_slots.response_ended(response)
        event_log.pack_after_commit(response.pk)
    return True


def create_without_generating(tenant: Tenant, request: CreateRequest) -> Response:
    """``generate: false`` over the WebSocket (Codex's prewarm): the response is stored with
    its input and completes at once with no output, in one transaction, for a later
    ``previous_response_id``."""
    with transaction.atomic():
        response = create_response(tenant, request)
        end_response(response.pk, ResponseStatus.COMPLETED, usage=Usage().as_dict())
    return response
