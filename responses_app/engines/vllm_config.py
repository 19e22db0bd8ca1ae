"""How this server configures a vLLM engine core: the engine arguments of a registry entry
and, on the CPU, the executor and threads that leave a core to the rest of the stack.

Shared by a worker process's own engine (engines/vllm_engine.py) and a GPU node's shared
engine core (engines/shared_core.py), whose launcher and clients must build the same
configuration. vLLM is imported lazily.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

log = logging.getLogger(__name__)

# On the CPU, vLLM's default executor ("mp") computes in a worker process and keeps a core
# for its engine core process, which spins on shared memory (sched_yield) while the worker
# computes a step and for a second after the last one: that core is then lost to the web
# process, PostgreSQL and Redis. A single-worker engine runs the "uni" executor instead,
# which schedules and computes in the engine core process and never spins. Its OpenMP
# threads stay off one core, as vLLM's own CPU layout keeps them (a registry entry's
# "cpu_threads" overrides the count), and that core serves the rest of the stack.
CPU_RESERVED_CORES = 1
# Engine arguments this server always sets; a registry entry's "engine_args" may override.
DEFAULT_ENGINE_ARGS: dict[str, Any] = {
    "enable_prefix_caching": True,  # the turns of a tool loop share their prefix
    "disable_log_stats": False,  # scheduler statistics feed /metrics and the inspect command
    # xgrammar, named explicitly: it is the compiler that the create path checks schemas
    # with, and only an explicit backend honours disable_any_whitespace (without it a
    # model can pad JSON with whitespace until max_tokens).
    "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
}


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def cpu_threads(configured: int | None) -> int:
    """The OpenMP threads of a CPU engine: as configured, or all physical cores but the reserved."""
    import psutil  # a dependency of vLLM

    return configured or max((psutil.cpu_count(logical=False) or 1) - CPU_RESERVED_CORES, 1)


def engine_arguments(entry: dict[str, Any]) -> dict[str, Any]:
    """vLLM's engine arguments for a registry entry: this server's defaults, the entry's
    own, and on the CPU a single-worker engine's "uni" executor (see CPU_RESERVED_CORES)."""
    from vllm.config import StructuredOutputsConfig

    arguments = {**DEFAULT_ENGINE_ARGS, **entry.get("engine_args", {})}
    arguments.update(model=entry["path"], max_model_len=entry["max_model_len"])
    if isinstance(arguments.get("structured_outputs_config"), dict):  # as written in a JSON registry
        arguments["structured_outputs_config"] = StructuredOutputsConfig(**arguments["structured_outputs_config"])
    if _single_worker_on_cpu(arguments):
        arguments["distributed_executor_backend"] = "uni"
    return arguments


def _single_worker_on_cpu(arguments: dict[str, Any]) -> bool:
    world_size = 1
    for name in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        world_size *= arguments.get(name) or 1
    return _on_cpu() and world_size == 1 and arguments.get("distributed_executor_backend") in (None, "uni")


@contextmanager
def cpu_layout(entry: dict[str, Any]) -> Iterator[None]:
    """While an engine core starts: on the CPU, the environment of its "uni" executor
    (engine_arguments) and its OpenMP thread count."""
    if not _single_worker_on_cpu({**DEFAULT_ENGINE_ARGS, **entry.get("engine_args", {})}):
        yield
        return
    threads = cpu_threads(entry.get("cpu_threads"))
    # vLLM's CPU platform replaces "uni" with "mp" unless this variable is 0. AsyncLLM still
    # runs its engine core in a process of its own (so vLLM's warning that its random seed
    # may affect this process does not apply). The engine core is spawned inside
    # from_engine_args and reads OMP_NUM_THREADS when it starts; this process keeps its own
    # settings, as vLLM's mp executor does when it spawns its workers.
    overrides = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0", "OMP_NUM_THREADS": str(threads)}
    saved = {name: os.environ.get(name) for name in overrides}
    os.environ.update(overrides)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    log.info("vLLM computes on the CPU in its engine core process with %d OpenMP threads", threads)
