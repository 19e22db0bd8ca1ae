"""The vLLM engine: one ``AsyncLLM`` per model per worker process, fed by every response
that the process runs, so that vLLM batches them continuously.

Prompts go in as harmony token ids and tokens come back as per-step deltas; nothing is
detokenized here (the harmony bridge parses token ids). vLLM is imported lazily: the web
process and echo-only workers never load it.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections import deque
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from responses_app.engines.base import EngineChunk, EngineDead, SamplingParams
from responses_app.engines.vllm_config import cpu_layout, engine_arguments

if TYPE_CHECKING:
    from vllm.v1.metrics.loggers import StatLoggerBase, StatLoggerFactory

log = logging.getLogger(__name__)
ABORTED_HISTORY = 1000
STEP_HISTORY = 2000


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
    def __init__(self, model_id: str, entry: dict[str, Any], shared_core: tuple[Path, int] | None = None,
                 prefill_tokens_per_s: float = 30_000.0) -> None:
        """``shared_core``: the node's engine core to attach to (its addresses file and this
        process's client slot), or None to launch an engine core of this process's own;
        ``prefill_tokens_per_s``: what a prompt token is expected to cost, to report a backlog."""
        self.model_id = model_id
        self.prefill_tokens_per_s = prefill_tokens_per_s
        self.entry = entry
        self.shared_core = shared_core
        self._core: Any = None
        self.scheduler = SchedulerSnapshot()
        self._llm: Any = None
        self._running: set[str] = set()
        # The prompt tokens of this process's requests that have no output yet: what stands
        # for the prefill ahead (vLLM's own queue is not visible to a client of its core).
        self._prefilling: dict[str, int] = {}
        self._aborted: deque[str] = deque(maxlen=ABORTED_HISTORY)

    # --- Engine protocol -----------------------------------------------------------------

    async def start(self) -> None:
        # In a thread: loading takes tens of seconds, and the loop meanwhile carries the
        # process's other responses (their leases, their streams). AsyncLLM starts its
        # output handler on the loop with the first request.
        self._llm = await asyncio.to_thread(self._create)
        config = self._llm.vllm_config.cache_config
        log.info("vLLM engine for %s is up: %s KV cache blocks of %s tokens, prefix caching %s",
                 self.model_id, config.num_gpu_blocks, config.block_size, config.enable_prefix_caching)

    def _create(self) -> Any:
        from vllm.engine.arg_utils import AsyncEngineArgs
        from vllm.v1.engine.async_llm import AsyncLLM

        stat_loggers: list[StatLoggerFactory] = [self._stat_logger()]
        if self.shared_core is not None:
            from responses_app.engines.shared_core import CoreAddresses, engine_config

            addresses_file, slot = self.shared_core
            core = CoreAddresses.load(addresses_file)
            log.info("vLLM engine for %s: client %d of the node's engine core (pid %d)", self.model_id, slot,
                     core.pid)
            self._core = core
            with cpu_layout(self.entry):  # the config as the engine core's launcher made it
                config = engine_config(self.entry, core.slots, slot)
            return AsyncLLM.from_vllm_config(config, stat_loggers=stat_loggers, client_addresses=core.client(slot),
                                             client_count=core.slots, client_index=slot)
        with cpu_layout(self.entry):
            return AsyncLLM.from_engine_args(AsyncEngineArgs(**engine_arguments(self.entry)),
                                             stat_loggers=stat_loggers)

    async def generate(
        self, prompt_token_ids: list[int], params: SamplingParams, request_id: str
    ) -> AsyncIterator[EngineChunk]:
        from vllm.inputs import TokensPrompt
        from vllm.v1.engine.exceptions import EngineDeadError

        self._running.add(request_id)
        self._prefilling[request_id] = len(prompt_token_ids)
        first = True
        try:
            prompt = TokensPrompt(prompt_token_ids=prompt_token_ids)
            if params.cache_salt is not None:
                prompt["cache_salt"] = params.cache_salt  # no prefix is shared across tenants
            outputs = self._llm.generate(prompt, self._sampling_params(params), request_id)
            async for output in outputs:
                token_ids = list(output.outputs[0].token_ids)
                if token_ids or first:
                    if first:
                        self._prefilling.pop(request_id, None)
                    logprobs = (_token_logprobs(token_ids, output.outputs[0].logprobs, params.logprobs)
                                if params.logprobs is not None else None)
                    yield EngineChunk(token_ids=token_ids, cached_tokens=output.num_cached_tokens if first else None,
                                      logprobs=logprobs)
                    first = False
        except EngineDeadError as error:
            if self.shared_core is not None:
                # A client of the node's engine core cannot attach to the core its supervisor
                # starts next: this process ends, and its responses are continued as a lost
                # worker's once the node is back (engines/node.py).
                log.critical("the node's engine core for %s died; this worker process exits", self.model_id)
                os._exit(70)
            raise EngineDead(str(error) or "vLLM's engine core died") from error
        finally:
            self._running.discard(request_id)
            self._prefilling.pop(request_id, None)

    def prefill_backlog_s(self) -> float:
        # An upper bound: some of those tokens are in the prefix cache.
        return sum(self._prefilling.values()) / self.prefill_tokens_per_s

    async def abort(self, request_id: str) -> None:
        self._aborted.append(request_id)
        if request_id in self._running:
            await self._llm.abort(request_id)

    async def shutdown(self) -> None:
        if self._llm is not None:
            self._llm.shutdown()

    def is_dead(self) -> bool:
        # A shared engine core that was SIGKILLed tells its clients nothing (they have no
        # monitor of a process they did not start): its process is checked instead.
        return self._llm is not None and (self._llm.errored or (self._core is not None and not self._core.core_alive()))

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
        for name in ("top_p", "presence_penalty", "frequency_penalty", "logprobs", "seed", "top_k", "min_p",
                     "repetition_penalty"):
            if getattr(params, name) is not None:
                options[name] = getattr(params, name)
        if params.extra.get("json_schema") is not None or params.extra.get("json_object"):
            from vllm.sampling_params import StructuredOutputsParams

            options["structured_outputs"] = (
                StructuredOutputsParams(json=params.extra["json_schema"])
                if params.extra.get("json_schema") is not None
                else StructuredOutputsParams(json_object=True)
            )
        if params.extra.get("grammar") is not None:
            from vllm.sampling_params import StructuredOutputsParams

            # A call's input: {"type": "grammar", "syntax": "lark" | "regex" | "json_schema", "definition"}
            # (a custom tool's format; a file search's arguments).
            grammar = params.extra["grammar"]
            syntax = {"regex": "regex", "json_schema": "json"}.get(grammar["syntax"], "grammar")
            options["structured_outputs"] = StructuredOutputsParams(**{syntax: grammar["definition"]})
        if params.extra.get("structural_tag") is not None and "structured_outputs" not in options:
            from vllm.sampling_params import StructuredOutputsParams

            # tool_choice allowed_tools: the recipients the model may write (harmony/allowed_calls.py);
            # a final answer's format or a custom tool's grammar, where one applies, comes first.
            options["structured_outputs"] = StructuredOutputsParams(structural_tag=params.extra["structural_tag"])
        return VllmSamplingParams(**options)

    def _stat_logger(self) -> type[StatLoggerBase]:
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


def _token_logprobs(token_ids: list[int], logprobs: Any, top: int) -> list[list[tuple[int, float]]]:
    """vLLM's per-token ``{id: Logprob}`` (the sampled token, and the ``top`` most likely) as
    EngineChunk.logprobs: the sampled token first, then the ``top`` alternatives by rank."""
    result = []
    for token_id, candidates in zip(token_ids, logprobs or [], strict=False):
        chosen = candidates.get(token_id)
        alternatives = sorted(((other, entry) for other, entry in candidates.items()
                               if entry.rank is not None and entry.rank <= top), key=lambda pair: pair[1].rank)
        result.append([(token_id, chosen.logprob if chosen is not None else 0.0),
                       *((other, entry.logprob) for other, entry in alternatives)])
    return result
