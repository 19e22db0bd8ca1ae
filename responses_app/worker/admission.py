"""How many responses a worker process runs at once: its share of the engine's batch
(settings.WORKER_RESPONSE_SLOTS). A response's task takes a slot before it claims the
response and gives it back when the response has ended; a task that finds none free
waits, and with it the process's threads pool, which then takes no more messages.

On a GPU node whose worker processes share one engine core (engines/node.py), the slots
are the node's: the batch is the engine's, whichever process feeds it. They are then the
bytes of a file (settings.NODE_ADMISSION_FILE) locked with fcntl, each held by one response
of one process; the kernel releases a process's locks when it dies, so a lost worker's
slots come back without anyone cleaning up.
"""

from __future__ import annotations

import fcntl
import os
import random
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings

# How often a task waiting for a node slot looks again (a slot freed in another process
# wakes nobody here).
NODE_SLOT_POLL_S = 0.05

_slots: threading.BoundedSemaphore | None = None
_node_slots: NodeSlots | None = None
_slots_lock = threading.Lock()


@contextmanager
def response_slot() -> Iterator[None]:
    global _slots, _node_slots
    with _slots_lock:
        if _slots is None:
            _slots = threading.BoundedSemaphore(settings.WORKER_RESPONSE_SLOTS)
            if settings.NODE_ADMISSION_FILE:
                _node_slots = NodeSlots(Path(settings.NODE_ADMISSION_FILE), settings.WORKER_RESPONSE_SLOTS)
    with _slots:  # first this process's share: no task polls the file while its own process is full
        slot = _node_slots.acquire() if _node_slots is not None else None
        try:
            with _running():
                yield
        finally:
            if _node_slots is not None and slot is not None:
                _node_slots.release(slot)


_running_count = 0


@contextmanager
def _running() -> Iterator[None]:
    global _running_count
    with _slots_lock:
        _running_count += 1
    try:
        yield
    finally:
        with _slots_lock:
            _running_count -= 1


def running_responses() -> int:
    """The responses that hold one of this process's slots (the node's, on a shared core)."""
    return _running_count


class NodeSlots:
    """``count`` slots shared by the processes that open ``path``: slot i is byte i of the
    file, held by a POSIX record lock. Record locks belong to the process, not the thread,
    so the process's own holders are tracked here, and the file stays open for the
    process's lifetime (closing any descriptor of it would drop all its locks).

    A slot freed by another process wakes nobody here, so while the node is full one
    waiting thread of the process looks again every NODE_SLOT_POLL_S; the others sleep until
    a slot of this process is released or that thread hands the looking over."""

    def __init__(self, path: Path, count: int) -> None:
        self.count = count
        self._fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        self._held: set[int] = set()
        self._changed = threading.Condition()
        self._polling = False

    def acquire(self) -> int:
        """A free slot of the node, waiting for one."""
        with self._changed:
            try:
                while (slot := self._take()) is None:
                    if self._polling:
                        self._changed.wait()
                        continue
                    self._polling = True
                    try:
                        self._changed.wait(NODE_SLOT_POLL_S)
                    finally:
                        self._polling = False
                return slot
            finally:
                self._changed.notify()  # the next waiter looks (and polls, if the node is still full)

    def try_acquire(self) -> int | None:
        with self._changed:
            return self._take()

    def release(self, slot: int) -> None:
        with self._changed:
            fcntl.lockf(self._fd, fcntl.LOCK_UN, 1, slot)
            self._held.discard(slot)
            self._changed.notify()

    def held(self) -> int:
        """The slots this process holds."""
        with self._changed:
            return len(self._held)

    def _take(self) -> int | None:
        # From a random start, so that processes do not all contend for the first bytes.
        start = random.randrange(self.count)
        for offset in range(self.count):
            slot = (start + offset) % self.count
            if slot in self._held:
                continue
            try:
                fcntl.lockf(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, slot)
            except OSError:  # held by another process
                continue
            self._held.add(slot)
            return slot
        return None
