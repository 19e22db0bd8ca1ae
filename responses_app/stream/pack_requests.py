"""Finished responses whose event logs wait to be packed (stream/event_log.pack), sent to
the maintenance queue (``PACK_QUEUE``) as one task per ``PACK_DELAY_S``.

Packing a log reads, frames and compresses every event of it: a few ms of CPU per
response. Done where the response ended, it was the biggest part of a worker's end, on
the process that must keep the GPU's batch fed; a GPU node consumes only its models'
queues, so the maintenance queue's workers pack instead. A request lost with its process
(or with the broker) leaves the rows, a complete log too, to the periodic sweep
(``pack_event_logs``).
"""

from __future__ import annotations

import logging
import threading

from celery import current_app
from django.conf import settings

log = logging.getLogger(__name__)

PACK_TASK = "responses_app.tasks.pack_event_logs_of"


class PackRequests:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: list[str] = []
        self._timer: threading.Timer | None = None

    def add(self, response_id: str) -> None:
        with self._lock:
            self._waiting.append(response_id)
            if self._timer is None:
                self._timer = threading.Timer(settings.PACK_DELAY_S, self.send)
                self._timer.daemon = True
                self._timer.start()

    def send(self) -> None:
        """One task with every response waiting (its timer's; tests call it too)."""
        with self._lock:
            waiting, self._waiting, timer, self._timer = self._waiting, [], self._timer, None
        if timer is not None and timer is not threading.current_thread():
            timer.cancel()  # sent early: that timer would otherwise send the next ones early
        if not waiting:
            return
        try:
            # By name: the task module imports the worker, which ends responses through here.
            current_app.send_task(PACK_TASK, args=[waiting], queue=settings.PACK_QUEUE)
        except Exception:  # the broker is down: the sweep packs them
            log.warning("could not request packing of %d event logs; the sweep will pack them", len(waiting),
                        exc_info=True)


pack_requests = PackRequests()
