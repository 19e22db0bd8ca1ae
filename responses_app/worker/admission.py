"""How many responses a worker process runs at once: its response slots (the engines'
batches, settings.WORKER_RESPONSE_SLOTS). A response's task takes a slot before it claims
the response and gives it back when the response has ended; a task that finds none free
waits, and with it the process's threads pool, which then takes no more messages."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings

_slots: threading.BoundedSemaphore | None = None
_slots_lock = threading.Lock()


@contextmanager
def response_slot() -> Iterator[None]:
    global _slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.WORKER_RESPONSE_SLOTS)
    with _slots:
        yield
