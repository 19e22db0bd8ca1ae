"""Sending a response's task to the queue that dispatch places it in (placement.py).

Below the services, so that the one function that ends a response (stream/store.py)
can hand the next response of a WebSocket lane to the broker in the same place.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

import redis
from celery import current_app
from django.conf import settings
from django.utils import timezone

from responses_app.dispatch import fleet, placement
from responses_app.lib.cooldown import Cooldown
from responses_app.models import Response

log = logging.getLogger(__name__)

RUN_RESPONSE_TASK = "responses_app.tasks.run_response"
# Redis's broker takes a worker's next message from the lowest priority number first, over
# all the queues it consumes: deferred responses wait behind every interactive one.
INTERACTIVE_PRIORITY = 0
DEFERRED_PRIORITY = 9
BROKER_COOLDOWN_S = 2.0
_broker_cooldown = Cooldown(BROKER_COOLDOWN_S)


def priority_of(response: Response) -> int:
    """A batch's responses wait behind every interactive one, as deferred ones do."""
    return DEFERRED_PRIORITY if response.batch_id else INTERACTIVE_PRIORITY


def send(response: Response, task_id: str, priority: int | None = None, hint: placement.Hint | None = None,
         spilled_from: str | None = None) -> None:
    """Publish the response's task (at ``priority_of`` unless told) to the queue that
    dispatch places it in: one node's, or its model's (always for a deferred or batch
    response, and once ``spilled_from`` a node)."""
    model_queue = settings.MODEL_REGISTRY[response.model]["queue"]
    priority = priority_of(response) if priority is None else priority
    where = placement.Placement(model_queue, None, "model_queue")
    try:
        if spilled_from:
            fleet.count_decision(response.model, spilled_from, "spilled")
        else:
            looked_up, remembered = placement.affinity_keys(response, hint)
            if priority != DEFERRED_PRIORITY:  # a deferred response's first token can wait for any node
                where = placement.place(model_queue, looked_up, hint)
            fleet.record_dispatch(response.pk, remembered, where.queue if where.node else None, where.prefill_s,
                                  where.wait_s, (response.model, where.node or "", where.decision))
    except redis.RedisError as error:  # no preference is known: any node takes it
        log.warning("dispatch of %s by model queue: %s", response.pk, error)
        where = placement.Placement(model_queue, None, "model_queue")
    # By name: the task module imports the worker, which writes through the services.
    current_app.send_task(RUN_RESPONSE_TASK, args=[response.pk], queue=where.queue, task_id=task_id,
                          priority=priority)


def try_send(response: Response, task_id: str, priority: int | None = None,
             hint: placement.Hint | None = None, spilled_from: str | None = None) -> bool:
    """Send, or leave the response for the redelivery sweep (a broker outage: after one
    failed send, this process does not try again for BROKER_COOLDOWN_S)."""
    if _broker_cooldown.active:
        return False
    try:
        send(response, task_id, priority, hint=hint, spilled_from=spilled_from)
    except Exception as error:
        _broker_cooldown.failed()
        log.warning("could not enqueue %s (%s: %s); the redelivery sweep will send it", response.pk,
                    type(error).__name__, error)
        return False
    _broker_cooldown.succeeded()
    return True


def try_enqueue(response: Response, priority: int | None = None, spilled_from: str | None = None,
                **fields: Any) -> bool:
    """Send the response's task and mark it enqueued (with ``fields``), or leave it for
    the redelivery sweep."""
    task_id = str(uuid.uuid4())
    if not try_send(response, task_id, priority, spilled_from=spilled_from):
        return False
    now = timezone.now()
    Response.objects.filter(pk=response.pk).update(task_id=task_id, enqueued_at=now, **fields)
    response.task_id, response.enqueued_at = task_id, now
    return True
