"""What the Celery broker can tell about the model queues: which live workers consume
each queue, and how many messages wait in one.

Both are questions to a broker that may be down: they raise, and callers (health, the
redelivery sweep) treat that as "unknown", never as "empty".
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass

from celery import current_app
from kombu.exceptions import ChannelError

log = logging.getLogger(__name__)
INSPECT_TIMEOUT_S = 1.0
WORKERS_CACHE_S = 5.0
# An answer from an inspection under way is waited for this long at most.
INSPECTION_WAIT_S = 2.0


def queue_depths(queues: list[str]) -> dict[str, int]:
    """Messages waiting in each of ``queues`` (not those a worker has taken), over one connection."""
    depths = {}
    with current_app.connection_for_read() as connection:
        channel = connection.default_channel
        for queue in queues:
            try:
                depths[queue] = channel.queue_declare(queue=queue, passive=True).message_count
            except ChannelError:  # Redis removes an empty queue's list: the queue "does not exist"
                depths[queue] = 0
    return depths


@dataclass
class _WorkerAnswer:
    queues_by_worker: dict[str, set[str]] | None
    error: BaseException | None
    at: float


class WorkerInspector:
    """Which live worker consumes which queue: one broadcast per ``ttl`` at most, whatever
    the number of callers (concurrent callers wait for the broadcast under way)."""

    def __init__(self, ttl: float = WORKERS_CACHE_S, timeout: float = INSPECT_TIMEOUT_S) -> None:
        self.ttl = ttl
        self.timeout = timeout
        self.broadcasts = 0
        self._lock = threading.Lock()
        self._answer: _WorkerAnswer | None = None

    def queues_by_worker(self) -> dict[str, set[str]]:
        answer = self._fresh_answer()
        if answer is None:
            if not self._lock.acquire(timeout=INSPECTION_WAIT_S):
                raise TimeoutError("an earlier worker inspection is still waiting for the broker")
            try:
                answer = self._fresh_answer() or self._inspect()
            finally:
                self._lock.release()
        if answer.error is not None:
            raise answer.error
        return answer.queues_by_worker or {}

    def _fresh_answer(self) -> _WorkerAnswer | None:
        answer = self._answer
        if answer is not None and time.monotonic() - answer.at < self.ttl:
            return answer
        return None

    def _inspect(self) -> _WorkerAnswer:
        self.broadcasts += 1
        try:
            replies = current_app.control.inspect(timeout=self.timeout).active_queues() or {}
            answer = _WorkerAnswer({worker: {queue["name"] for queue in queues}
                                    for worker, queues in replies.items()}, None, time.monotonic())
        except Exception as error:  # cached too: a broken broker is not asked again at once
            log.warning("worker inspection failed: %s", error)
            answer = _WorkerAnswer(None, error, time.monotonic())
        self._answer = answer
        return answer


WORKERS = WorkerInspector()


def queue_consumed(queue: str) -> bool:
    """Whether at least one live worker consumes ``queue`` (as of WORKERS_CACHE_S ago at most)."""
    return any(queue in queues for queues in WORKERS.queues_by_worker().values())
