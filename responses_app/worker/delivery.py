"""How a worker takes a task's message from the broker.

The message is acknowledged when a task thread takes it (early ack; see settings): from
then on a response's row, not the message, says what happens to it, and the sweeps that
beat sends are idempotent. Acknowledging is therefore best effort, for every task (the
app's task class, project/celery.py). After a broker restart the consumer has a new connection while a
task thread may still hold a message of the old one, whose channel is gone; kombu then
raises from ``ack`` (even an AttributeError, not a connection error), and raised in the
consumer that error stops the whole worker. The message is then either already lost
with the old broker or restored and delivered again, which the claim makes a no-op.
"""

from __future__ import annotations

import logging

from celery import Task
from celery.worker.request import Request

log = logging.getLogger(__name__)


class ResponseTaskRequest(Request):  # type: ignore[misc]  # Celery ships no type information
    def acknowledge(self) -> None:
        try:
            super().acknowledge()
        except Exception as error:  # noqa: BLE001 - any failure of a stale channel; see above
            self.acknowledged = True
            log.warning("task %s: its message could not be acknowledged (%s: %s); the database decides "
                        "whether it runs", self.id, type(error).__name__, error)


class BestEffortAckTask(Task):  # type: ignore[misc]  # Celery ships no type information
    """Every task of the app: a sweep's ack that fails after a broker restart must not
    stop the worker either (one did, in a Redis restart under a batch)."""

    Request = ResponseTaskRequest
