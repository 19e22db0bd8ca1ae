"""A node's response slots: the engine's batch counted across the worker processes that
share it (worker/admission.NodeSlots), and given back by the kernel when a process dies."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
from pathlib import Path

from responses_app.worker.admission import NodeSlots

# A process that takes ``count`` slots of the node, says how many it got, and holds them.
HOLDER = """
import sys, time
from pathlib import Path
from responses_app.worker.admission import NodeSlots
slots = NodeSlots(Path(sys.argv[1]), int(sys.argv[2]))
held = [slot for slot in (slots.try_acquire() for _ in range(int(sys.argv[3]))) if slot is not None]
print(len(held), flush=True)
time.sleep(600)
"""


def hold(path: Path, count: int, taking: int) -> tuple[subprocess.Popen, int]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(count), str(taking)],
                               stdout=subprocess.PIPE, text=True)
    return process, int(process.stdout.readline())


def test_the_processes_of_a_node_share_its_slots_and_a_dead_process_gives_its_own_back(tmp_path):
    path = tmp_path / "admission"
    first, got = hold(path, 8, 5)
    second, second_got = hold(path, 8, 5)
    try:
        assert (got, second_got) == (5, 3)  # the node's 8, whichever process asks
        here = NodeSlots(path, 8)
        assert here.try_acquire() is None
        # Threads that wait while the node is full: one looks again every NODE_SLOT_POLL_S.
        got: list[int] = []
        waiters = [threading.Thread(target=lambda: got.append(here.acquire())) for _ in range(3)]
        for waiter in waiters:
            waiter.start()
        first.send_signal(signal.SIGKILL)
        first.wait()
        for waiter in waiters:
            waiter.join(timeout=5)
        assert len(set(got)) == 3
        taken = got + [here.try_acquire() for _ in range(3)]
        assert None not in taken[:5] and taken[5] is None and len(set(taken[:5])) == 5
        here.release(taken[0])
        assert here.try_acquire() == taken[0]
    finally:
        for process in (first, second):
            process.kill()
            process.wait()


def test_the_threads_of_one_process_hold_distinct_slots_and_a_waiter_gets_the_first_freed(tmp_path):
    slots = NodeSlots(tmp_path / "admission", 3)
    held = [slots.acquire() for _ in range(3)]
    assert sorted(held) == [0, 1, 2] and slots.held() == 3
    got: list[int] = []
    waiter = threading.Thread(target=lambda: got.append(slots.acquire()))
    waiter.start()
    waiter.join(timeout=0.3)
    assert waiter.is_alive()  # the node is full: it waits
    slots.release(held[1])
    waiter.join(timeout=5)
    assert got == [held[1]]
