"""The vLLM engine: one ``AsyncLLM`` per model per worker process, fed by every response
that the process runs, so that vLLM batches them continuously.

Prompts go in as harmony token ids and tokens come back as per-step deltas; nothing is
detokenized here (the harmony bridge parses token ids). vLLM is imported lazily: the web
process and echo-only workers never load it.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from .base import EngineChunk, EngineDead, SamplingParams

log = logging.getLogger(__name__)
ABORTED_HISTORY = 1000
STEP_HISTORY = 2000
# The nice value of vLLM's engine core process when vLLM computes on the CPU (a registry
# entry's "engine_nice" overrides it). While its worker computes a step, and for a second
# after the last one, the engine core spins on shared memory (sched_yield); at equal
# priority that spin takes the cores from the web process, PostgreSQL and Redis, and a
# burst of creates then waits seconds behind it. The worker process, which does the
# model's compute, keeps its priority.
CPU_ENGINE_NICE = 10
# Engine arguments this server always sets; a registry entry's "engine_args" may override.
DEFAULT_ENGINE_ARGS: dict[str, Any] = {
    "enable_prefix_caching": True,  # the turns of a tool loop share their prefix
    "disable_log_stats": False,  # scheduler statistics feed /metrics and the inspect command
    # xgrammar, named explicitly: it is the compiler that the create path checks schemas
    # with, and only an explicit backend honours disable_any_whitespace (without it a
    # model can pad JSON with whitespace until max_tokens).
    "structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": True},
}


@dataclass
class SchedulerSnapshot:
    """vLLM's own scheduler statistics, as last reported by its engine core, and the
    number of running requests at each of the last STEP_HISTORY engine steps."""

    running: int = 0
    waiting: int = 0
    max_running: int = 0
    steps: int = 0
    kv_cache_usage: float = 0.0
    history: deque = field(default_factory=lambda: deque(maxlen=STEP_HISTORY))

    def observe(self, running: int, waiting: int, kv_cache_usage: float) -> None:
        self.running, self.waiting, self.kv_cache_usage = running, waiting, kv_cache_usage
        self.max_running = max(self.max_running, running)
        self.steps += 1
        self.history.append((self.steps, running))

    def as_dict(self) -> dict[str, Any]:
        return {"running": self.running, "waiting": self.waiting, "max_running": self.max_running,
                "steps": self.steps, "kv_cache_usage": self.kv_cache_usage, "history": list(self.history)}


class VllmEngine:
    def __init__(self, model_id: str, entry: dict[str, Any]) -> None:
        self.model_id = model_id
        self.entry = entry
        self.scheduler = SchedulerSnapshot()
        self._llm: Any = None
        self._running: set[str] = set()
        self._aborted: deque[str] = deque(maxlen=ABORTED_HISTORY)

    # --- Engine protocol -----------------------------------------------------------------

    async def start(self) -> None:
        from vllm.config import StructuredOutputsConfig
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        arguments = {**DEFAULT_ENGINE_ARGS, **self.entry.get("engine_args", {})}
        arguments.update(model=self.entry["path"], max_model_len=self.entry["max_model_len"])
        if isinstance(arguments.get("structured_outputs_config"), dict):  # as written in a JSON registry
            arguments["structured_outputs_config"] = StructuredOutputsConfig(**arguments["structured_outputs_config"])
        spawned_before = _child_pids()
        self._llm = AsyncLLM.from_engine_args(AsyncEngineArgs(**arguments), stat_loggers=[self._stat_logger()])
        nice = self.entry.get("engine_nice", CPU_ENGINE_NICE if _on_cpu() else 0)
        if nice:
            # This process's new children are the engine core(s); the workers are theirs.
            _renice(_child_pids() - spawned_before, nice)
        config = self._llm.vllm_config.cache_config
        log.info("vLLM engine for %s is up: %s KV cache blocks of %s tokens, prefix caching %s",
                 self.model_id, config.num_gpu_blocks, config.block_size, config.enable_prefix_caching)

    async def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, request_id: str
    ) -> AsyncIterator[EngineChunk]:
        from vllm.inputs import TokensPrompt
        from vllm.v1.engine.exceptions import EngineDeadError

        self._running.add(request_id)
        first = True
        try:
            outputs = self._llm.generate(TokensPrompt(prompt_token_ids=prompt_token_ids),
                                         self._sampling_params(params), request_id)
            async for output in outputs:
                token_ids = list(output.outputs[0].token_ids)
                if token_ids or first:
                    yield EngineChunk(token_ids=token_ids, cached_tokens=output.num_cached_tokens if first else None)
                    first = False
        except EngineDeadError as error:
            raise EngineDead(str(error) or "vLLM's engine core died") from error
        finally:
            self._running.discard(request_id)

    async def abort(self, request_id: str) -> None:
        self._aborted.append(request_id)
        if request_id in self._running:
            await self._llm.abort(request_id)

    async def shutdown(self) -> None:
        if self._llm is not None:
            self._llm.shutdown()

    def is_dead(self) -> bool:
        return self._llm is not None and self._llm.errored

    # --- introspection -------------------------------------------------------------------

    def running_requests(self) -> set[str]:
        return set(self._running)

    def aborted_requests(self) -> list[str]:
        return list(self._aborted)

    def scheduler_stats(self) -> dict[str, Any]:
        return self.scheduler.as_dict()

    # --- internals -------------------------------------------------------------------------

    def _sampling_params(self, params: SamplingParams) -> Any:
        from vllm import SamplingParams as VllmSamplingParams
        from vllm.sampling_params import RequestOutputKind

        options: dict[str, Any] = {
            "max_tokens": params.max_tokens,
            "stop_token_ids": list(params.stop_token_ids),
            "detokenize": False,
            "output_kind": RequestOutputKind.DELTA,
            "skip_special_tokens": False,
        }
        if params.temperature is not None:
            options["temperature"] = params.temperature
        if params.top_p is not None:
            options["top_p"] = params.top_p
        if params.extra.get("seed") is not None:
            options["seed"] = params.extra["seed"]
        if params.extra.get("json_schema") is not None or params.extra.get("json_object"):
            from vllm.sampling_params import StructuredOutputsParams

            options["structured_outputs"] = (
                StructuredOutputsParams(json=params.extra["json_schema"])
                if params.extra.get("json_schema") is not None
                else StructuredOutputsParams(json_object=True)
            )
        return VllmSamplingParams(**options)

    def _stat_logger(self) -> type:
        """A StatLoggerBase bound to this engine: vLLM calls record() once per engine step,
        on the loop that runs the engine, with its scheduler's counts."""
        from vllm.v1.metrics.loggers import StatLoggerBase

        snapshot = self.scheduler

        class SchedulerRecorder(StatLoggerBase):
            def __init__(self, vllm_config: Any, engine_index: int = 0) -> None:
                pass

            def record(self, scheduler_stats: Any, iteration_stats: Any, *args: Any, **kwargs: Any) -> None:
                if scheduler_stats is not None:
                    snapshot.observe(scheduler_stats.num_running_reqs, scheduler_stats.num_waiting_reqs,
                                     scheduler_stats.kv_cache_usage)

            def log_engine_initialized(self) -> None:
                pass

        return SchedulerRecorder


def _on_cpu() -> bool:
    from vllm.platforms import current_platform

    return current_platform.is_cpu()


def _child_pids() -> set[int]:
    import psutil  # a dependency of vLLM

    return {child.pid for child in psutil.Process().children()}


def _renice(pids: set[int], nice: int) -> None:
    """Set the nice value of every thread of these processes (Linux's nice is per thread;
    threads started later inherit it, processes started earlier keep theirs)."""
    for pid in pids:
        try:
            for thread_id in os.listdir(f"/proc/{pid}/task"):
                os.setpriority(os.PRIO_PROCESS, int(thread_id), nice)
        except (FileNotFoundError, ProcessLookupError):  # a helper process that already exited
            continue
    log.info("vLLM engine core processes %s run at nice %d", sorted(pids), nice)
