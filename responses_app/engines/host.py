"""The engine host: one asyncio loop thread and one engine per model, per worker process.

Every response that a worker process runs is a task on this loop (worker/run.py), and
the engine batches their requests (vLLM's continuous batching): a token reaches its
response's parser without a thread hop. ORM work never runs here (worker/off_loop.py).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import AsyncGenerator, Coroutine
from concurrent.futures import Future
from pathlib import Path
from typing import Any

from django.conf import settings

from responses_app.engines.base import Engine, EngineChunk, EngineDead, SamplingParams

log = logging.getLogger(__name__)


class EngineHost:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="engine-loop", daemon=True)
        self._thread.start()
        # model -> the engine, or its start in progress (vLLM takes tens of seconds).
        self._engines: dict[str, Future] = {}
        self._lock = threading.Lock()

    def engine(self, model: str) -> Engine:
        """The model's engine, started on first use (or again after it died); blocks."""
        return self._engine_future(model).result()

    def engines(self) -> dict[str, Engine]:
        """The engines that are up."""
        with self._lock:
            futures = dict(self._engines)
        return {model: f.result() for model, f in futures.items() if f.done() and f.exception() is None}

    def _engine_future(self, model: str) -> Future:
        with self._lock:
            future = self._engines.get(model)
            if future is not None and future.done():
                if future.exception() is not None or future.result().is_dead():
                    # A failed start, or an engine that died between requests: start anew.
                    if future.exception() is None:
                        self._release(model, future.result())
                    future = None
            if future is None:
                future = self._engines[model] = Future()
                threading.Thread(target=self._start, args=(model, future), name=f"engine-start-{model}",
                                 daemon=True).start()
            return future

    def _start(self, model: str, future: Future) -> None:
        started = time.monotonic()
        log.info("engine for %s: loading", model)
        try:
            engine = create_engine(model)
            self.call(engine.start(), timeout=None)
        except BaseException as error:
            log.exception("engine for %s failed to start", model)
            future.set_exception(error)
            return
        log.info("engine for %s: ready in %.1f s", model, time.monotonic() - started)
        future.set_result(engine)

    async def stream(
        self, model: str, prompt_token_ids: list[int], params: SamplingParams, request_id: str, poll_s: float = 0.25
    ) -> AsyncGenerator[EngineChunk | None, None]:
        """On the engine loop: the request's chunks as the engine produces them (all that
        came since the consumer last asked, as one chunk), and None every ``poll_s``
        without output (also while the engine starts), so that the consumer can renew
        its lease and see a cancel. A consumer that stops early (``aclose``: cancel, a
        lost lease, an error) aborts the engine request. An engine error is raised here;
        EngineDead after the dead engine is forgotten, so that the next request starts a
        new one."""
        chunks = _Chunks()
        engine: list[Engine] = []
        pump = asyncio.ensure_future(self._pump(model, prompt_token_ids, params, request_id, chunks, engine))
        finished = False
        try:
            while True:
                if not await chunks.wait(poll_s):
                    yield None
                    continue
                items = chunks.take()
                produced = [item for item in items if isinstance(item, EngineChunk)]
                if produced:
                    yield produced[0] if len(produced) == 1 else _merged(produced)
                last = items[-1]
                if last is _END:
                    finished = True
                    return
                if isinstance(last, BaseException):
                    finished = True
                    if isinstance(last, EngineDead) and engine:
                        self._discard(model, engine[0])
                    raise last
        finally:
            if not finished:
                pump.cancel()
                if engine:
                    await engine[0].abort(request_id)

    async def _pump(self, model: str, prompt_token_ids: list[int], params: SamplingParams, request_id: str,
                    chunks: _Chunks, engine: list[Engine]) -> None:
        try:
            # Shielded: a consumer that stops early must not cancel the engine's start.
            engine.append(await asyncio.shield(asyncio.wrap_future(self._engine_future(model))))
            async for chunk in engine[0].generate(prompt_token_ids, params, request_id):
                chunks.put(chunk)
        except asyncio.CancelledError:
            raise
        except BaseException as error:  # raised to the consumer
            chunks.put(error)
        else:
            chunks.put(_END)

    def submit(self, coroutine: Coroutine) -> Future:
        """Run a coroutine on the engine loop; its future, for a thread to wait on."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop)

    def call(self, coroutine: Coroutine, timeout: float | None = 10) -> Any:
        """Run a coroutine on the engine loop and wait for its result."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=timeout)

    def shutdown(self) -> None:
        """Shut every engine down (worker shutdown)."""
        engines = self.engines()
        with self._lock:
            self._engines = {}
        for model, engine in engines.items():
            try:
                self.call(engine.shutdown(), timeout=60)
            except Exception:
                log.exception("shutting down the engine for %s failed", model)

    def _discard(self, model: str, engine: Engine) -> None:
        """Forget a dead engine (once): the next request starts a new one."""
        with self._lock:
            future = self._engines.get(model)
            if future is None or not future.done() or future.exception() is not None or future.result() is not engine:
                return
            del self._engines[model]
            self._release(model, engine)

    def _release(self, model: str, engine: Engine) -> None:
        log.error("engine for %s died; a new one starts with the next request", model)
        # Released in the background: vLLM's shutdown waits for its processes, and the task
        # thread that found the death must go on renewing its lease and failing its response.
        cleanup = asyncio.run_coroutine_threadsafe(engine.shutdown(), self._loop)

        def report(done: Future[None]) -> None:
            if done.exception():
                log.error("shutting down the dead engine for %s failed: %s", model, done.exception())

        cleanup.add_done_callback(report)


_END = object()


class _Chunks:
    """What the engine produced for one request, until its consumer takes it (both on the loop)."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: Any) -> None:
        self._items.append(item)
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def wait(self, timeout: float) -> bool:
        """True once something was put, False after ``timeout``."""
        if self._items:
            return True
        loop = asyncio.get_running_loop()
        waiter = self._waiter = loop.create_future()

        def wake() -> None:
            if not waiter.done():
                waiter.set_result(None)

        timer = loop.call_later(timeout, wake)
        try:
            await waiter
        finally:
            timer.cancel()
            self._waiter = None
        return bool(self._items)

    def take(self) -> list[Any]:
        """Everything put so far, up to and including the first exception or end."""
        taken: list[Any] = []
        while self._items:
            taken.append(self._items.popleft())
            if isinstance(taken[-1], BaseException) or taken[-1] is _END:
                break
        return taken


def _merged(produced: list[EngineChunk]) -> EngineChunk:
    logprobs = ([entry for chunk in produced for entry in chunk.logprobs or []]
                if produced[0].logprobs is not None else None)
    return EngineChunk(token_ids=[token for chunk in produced for token in chunk.token_ids],
                       cached_tokens=produced[0].cached_tokens, logprobs=logprobs)


def create_engine(model: str) -> Engine:
    entry = settings.MODEL_REGISTRY[model]
    if entry["engine"] == "echo":
        from responses_app.engines.echo import EchoEngine

        return EchoEngine(default_token_delay_ms=settings.ECHO_TOKEN_DELAY_MS,
                          prefix_cache_tokens=settings.ECHO_PREFIX_CACHE_TOKENS,
                          prefill_tokens_per_s=settings.ECHO_PREFILL_TOKENS_PER_S)
    if entry["engine"] == "vllm":
        from responses_app.engines.vllm_engine import VllmEngine

        return VllmEngine(model, entry, shared_core=_shared_core(model),
                          prefill_tokens_per_s=settings.FLEET_PREFILL_TOKENS_PER_S)
    raise ValueError(f"model {model!r}: unknown engine {entry['engine']!r}")


def _shared_core(model: str) -> tuple[Path, int] | None:
    """The node's engine core for ``model`` and this process's slot on it, where the node
    supervisor started this process as one of its clients (engines/node.py)."""
    if not settings.NODE_ENGINE_CORE_FILE:
        return None
    from responses_app.engines.shared_core import CoreAddresses

    path = Path(settings.NODE_ENGINE_CORE_FILE)
    if CoreAddresses.load(path).model != model:
        return None
    return path, settings.NODE_ENGINE_SLOT


_host: EngineHost | None = None
_host_lock = threading.Lock()


def engine_host() -> EngineHost:
    """This process's host, created on first use."""
    global _host
    with _host_lock:
        if _host is None:
            _host = EngineHost()
        return _host
