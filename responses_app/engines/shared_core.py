"""A GPU node's one vLLM engine core per model, shared by the node's worker processes.

One Python process cannot turn a GPU's 20,000+ tokens/s into events and commits, so a node
runs several worker processes whose ``AsyncLLM`` clients share one engine core, as
``vllm serve --api-server-count N`` does (../shared/reference/vllm-shared-engine.md). The
node supervisor (engines/node.py) runs ``serve_engine_core`` in a process of its own; it
launches the engine core with one input and one output socket per client slot and writes
their addresses to a file, from which each worker process's VllmEngine attaches to its slot.

A client cannot re-attach to a slot once it has used it (the engine greets each slot once,
at its start), so the core has more slots than the node has processes: a worker process
that dies is replaced in a spare slot, whose greeting waited queued for it.
"""

from __future__ import annotations

import json
import logging
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from responses_app.lib.files import write_atomically

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CoreAddresses:
    """Where a shared engine core listens for each client slot, and its process."""

    model: str
    inputs: list[str]
    outputs: list[str]
    pid: int  # the engine core process (a SIGKILL there tells its clients nothing)

    @property
    def slots(self) -> int:
        return len(self.inputs)

    def client(self, index: int) -> dict[str, str]:
        """AsyncLLM's ``client_addresses`` for slot ``index``."""
        return {"input_address": self.inputs[index], "output_address": self.outputs[index]}

    def save(self, path: Path) -> None:
        write_atomically(path, json.dumps(asdict(self)).encode())

    @classmethod
    def load(cls, path: Path) -> CoreAddresses:
        return cls(**json.loads(path.read_text()))

    def core_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def engine_config(entry: dict[str, Any], slots: int, rank: int) -> Any:
    """The VllmConfig of a shared core with ``slots`` clients, as the client of slot ``rank``
    (or -1: the launcher) builds it; launcher and clients must agree on it."""
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.usage.usage_lib import UsageContext

    from responses_app.engines.vllm_config import engine_arguments

    engine_args = AsyncEngineArgs(**engine_arguments(entry))
    engine_args._api_process_count = slots
    engine_args._api_process_rank = rank
    return engine_args.create_engine_config(usage_context=UsageContext.OPENAI_API_SERVER)


def serve_engine_core(model: str, entry: dict[str, Any], slots: int, run_dir: Path, addresses_file: Path) -> int:
    """Launch the model's engine core with ``slots`` client slots (IPC sockets in
    ``run_dir``), write its addresses to ``addresses_file`` once it is up, and return when
    its process has ended (its exit code), shutting down what it launched."""
    from vllm.v1.engine.utils import CoreEngineProcManager, EngineZmqAddresses, launch_core_engines
    from vllm.v1.executor import Executor

    from responses_app.engines.vllm_config import cpu_layout

    run_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    addresses = EngineZmqAddresses(inputs=[f"ipc://{run_dir}/input-{index}" for index in range(slots)],
                                   outputs=[f"ipc://{run_dir}/output-{index}" for index in range(slots)])
    with cpu_layout(entry):
        config = engine_config(entry, slots, rank=-1)
        with launch_core_engines(config, Executor.get_class(config), True, addresses) as launch:
            manager = launch.engine_manager
    assert isinstance(manager, CoreEngineProcManager)  # one local engine core: no Ray, no remote engines
    [process] = manager.processes
    assert process.pid is not None  # started
    CoreAddresses(model, addresses.inputs, addresses.outputs, process.pid).save(addresses_file)
    log.info("engine core for %s is up in %.1f s (pid %d, %d client slots)", model, time.monotonic() - started,
             process.pid, slots)
    try:
        process.join()
    finally:
        manager.shutdown(timeout=10)
    return process.exitcode if process.exitcode is not None else 1
