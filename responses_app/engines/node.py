"""The node supervisor: one process per GPU node and model, which runs the model's engine
core once and the node's worker processes as its clients (engines/shared_core.py).

It is not a Celery parent (whose forked children would inherit the engine's launcher and
its finalizers): it starts ``manage.py engine_core`` and N Celery workers as process
groups of their own and watches them.
- A worker process that dies is a lost worker (the reaper continues its responses on the
  node's other processes, as for any lost worker); it is replaced in a spare client slot
  of the engine core. With no spare slot left, the node restarts as below.
- The engine core that dies (raised, or SIGKILLed, which tells its clients nothing) takes
  the node's worker processes with it: their vLLM clients cannot attach to a new core.
  They are killed (their responses are continued after a restart, as a lost worker's), the
  engine core is started again, and then the worker processes.
- SIGTERM, SIGINT or SIGHUP stops the workers first (a warm shutdown: their responses end), then
  the engine core.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.conf import settings

from responses_app.engines.shared_core import CoreAddresses
from responses_app.lib.files import write_atomically

log = logging.getLogger(__name__)
WATCH_INTERVAL_S = 0.5
ENGINE_START_TIMEOUT_S = 900  # vLLM's own wait for an engine is 600 s; loading a 120b takes minutes
STOP_GRACE_S = 30


@dataclass
class NodePlan:
    """What a node runs for one model: the processes and the command that starts each."""

    model: str
    processes: int
    run_dir: Path
    worker_command: list[str]
    response_slots: int  # the engine's batch, which the node's processes share (worker/admission.py)
    spare_slots: int | None = None  # None: as many as processes (each may be replaced once per engine start)

    @property
    def slots(self) -> int:
        """The engine core's client slots."""
        return self.processes + (self.processes if self.spare_slots is None else self.spare_slots)

    @property
    def addresses_file(self) -> Path:
        return self.run_dir / "engine-core.json"

    @property
    def status_file(self) -> Path:
        return self.run_dir / "node.json"

    @property
    def admission_file(self) -> Path:
        return self.run_dir / "admission"


@dataclass
class _Worker:
    slot: int
    process: subprocess.Popen


@dataclass
class NodeSupervisor:
    plan: NodePlan
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    engine_starts: int = 0
    _engine: subprocess.Popen | None = None
    _core: CoreAddresses | None = None
    _workers: list[_Worker] = field(default_factory=list)
    _next_slot: int = 0
    _stopping: bool = False

    def run(self) -> None:
        """Run the node until SIGTERM, SIGINT or SIGHUP."""
        for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(signum, self._stop)
        self.plan.run_dir.mkdir(parents=True, exist_ok=True)
        try:
            self._start_node()
            while not self._stopping:
                self.watch()
                time.sleep(WATCH_INTERVAL_S)
        finally:
            self.shutdown()

    def watch(self) -> None:
        """One look at the node's processes, and what follows from what died."""
        if not self._engine_alive():
            log.error("engine core of %s died; restarting it and the node's worker processes", self.plan.model)
            self._restart_node()
            return
        for worker in list(self._workers):
            if worker.process.poll() is None:
                continue
            self._workers.remove(worker)
            self._write_status()
            log.error("worker process in slot %d exited (%s)", worker.slot, worker.process.returncode)
            if self._next_slot < self.plan.slots:
                self._start_worker()
            else:
                log.error("no client slot of the engine core is left; restarting the node")
                self._restart_node()
                return

    def shutdown(self) -> None:
        for worker in self._workers:
            _signal_group(worker.process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S  # one grace for all of them
        for worker in self._workers:
            _wait_or_kill(worker.process, max(deadline - time.monotonic(), 0))
        self._workers = []
        self._stop_engine()

    # --- internals --------------------------------------------------------------------------

    def _stop(self, signum: int, frame: object) -> None:
        self._stopping = True

    def _restart_node(self) -> None:
        """The workers killed (their clients cannot outlive the core), the core stopped, both started again."""
        self._kill_workers()
        self._stop_engine()
        self._start_node()

    def _start_node(self) -> None:
        self._start_engine()
        self._next_slot = 0
        for _ in range(self.plan.processes):
            self._start_worker()

    def _start_engine(self) -> None:
        self.plan.addresses_file.unlink(missing_ok=True)
        command = [sys.executable, str(settings.BASE_DIR / "manage.py"), "engine_core", "--model", self.plan.model,
                   "--slots", str(self.plan.slots), "--run-dir", str(self.plan.run_dir / "sockets"),
                   "--addresses-file", str(self.plan.addresses_file)]
        self._engine = subprocess.Popen(command, env=self.env, start_new_session=True)
        deadline = time.monotonic() + ENGINE_START_TIMEOUT_S
        while not self.plan.addresses_file.exists():
            if self._engine.poll() is not None or time.monotonic() > deadline or self._stopping:
                raise RuntimeError(f"the engine core of {self.plan.model} did not start")
            time.sleep(0.2)
        self._core = CoreAddresses.load(self.plan.addresses_file)
        self.engine_starts += 1
        log.info("engine core of %s up (pid %d, %d client slots)", self.plan.model, self._core.pid, self._core.slots)

    def _start_worker(self) -> None:
        slot, self._next_slot = self._next_slot, self._next_slot + 1
        env = {**self.env, "NODE_ENGINE_CORE_FILE": str(self.plan.addresses_file), "NODE_ENGINE_SLOT": str(slot),
               "NODE_ADMISSION_FILE": str(self.plan.admission_file),
               "WORKER_RESPONSE_SLOTS": str(self.plan.response_slots)}
        command = [part.replace("{slot}", str(slot)) for part in self.plan.worker_command]
        self._workers.append(_Worker(slot, subprocess.Popen(command, env=env, start_new_session=True)))
        self._write_status()
        log.info("worker process for %s started in slot %d", self.plan.model, slot)

    def _engine_alive(self) -> bool:
        return (self._engine is not None and self._engine.poll() is None
                and self._core is not None and self._core.core_alive())

    def _kill_workers(self) -> None:
        for worker in self._workers:
            _signal_group(worker.process, signal.SIGKILL)
            worker.process.wait()
        self._workers = []

    def _stop_engine(self) -> None:
        if self._engine is None:
            return
        _signal_group(self._engine, signal.SIGTERM)
        _wait_or_kill(self._engine, STOP_GRACE_S)
        if self._core is not None and self._core.core_alive():
            os.kill(self._core.pid, signal.SIGKILL)
        # A new core starts only once the old one is gone (and its GPU memory with it).
        deadline = time.monotonic() + STOP_GRACE_S
        while self._core is not None and self._core.core_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        self._engine, self._core = None, None

    def _write_status(self) -> None:
        """What the node runs now (node.json in its run directory), for operators and tests."""
        status = {"model": self.plan.model, "engine_starts": self.engine_starts,
                  "engine_core_pid": self._core.pid if self._core else None,
                  "workers": [{"slot": worker.slot, "pid": worker.process.pid} for worker in self._workers]}
        write_atomically(self.plan.status_file, json.dumps(status).encode())


def _signal_group(process: subprocess.Popen, signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except ProcessLookupError:
        pass


def _wait_or_kill(process: subprocess.Popen, grace_s: float) -> None:
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        _signal_group(process, signal.SIGKILL)
        process.wait()
