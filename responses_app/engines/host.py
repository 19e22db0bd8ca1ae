"""The engine host: one asyncio loop thread and one engine per model, per worker process.

Celery's threads pool runs many responses at once in one process; each task thread
hands its request to the shared loop, where the engine batches them (vLLM's continuous
batching). Task threads never touch the loop's objects directly: chunks come back
through a thread-safe queue. ORM work stays in the task threads.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections import deque
from collections.abc import Coroutine, Iterator
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

from django.conf import settings

from responses_app.engines.base import Engine, EngineChunk, EngineDead, SamplingParams

log = logging.getLogger(__name__)
_END = object()
STREAM_BATCH_S = 0.05


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

    def stream(
        self, model: str, prompt_token_ids: list[int], params: SamplingParams, request_id: str, poll_s: float = 0.25
    ) -> Iterator[EngineChunk | None]:
        """Yield chunks as the engine produces them, and None every ``poll_s`` without
        output (also while the engine is still starting), so the caller can renew its
        lease and check for cancellation. An engine error is re-raised in the caller's
        thread."""
        starting = self._engine_future(model)
        while not starting.done():
            try:
                starting.result(timeout=poll_s)
            except FutureTimeout:
                yield None
        engine = starting.result()
        chunks = _Handoff()

        async def pump() -> None:
            try:
                async for chunk in engine.generate(prompt_token_ids, params, request_id):
                    chunks.put(chunk)
            except BaseException as error:  # forwarded to the task thread, re-raised there
                chunks.put(error)
            finally:
                chunks.put(_END)

        future: Future = asyncio.run_coroutine_threadsafe(pump(), self._loop)
        finished = False
        try:
            while True:
                if not chunks.wait(poll_s):
                    yield None
                    continue
                # Everything the engine produces within STREAM_BATCH_S (the event-flush
                # interval) goes out as one chunk: under load a task thread wakes about once
                # per flush instead of once per engine step (its wake-ups, not the parsing,
                # cost the CPU that the engine needs).
                if isinstance(chunks.first(), EngineChunk):
                    time.sleep(STREAM_BATCH_S)
                items = chunks.take()
                if not items:
                    continue
                produced = [item for item in items if isinstance(item, EngineChunk)]
                if produced:
                    logprobs = ([entry for chunk in produced for entry in chunk.logprobs or []]
                                if produced[0].logprobs is not None else None)
                    yield EngineChunk(token_ids=[token for chunk in produced for token in chunk.token_ids],
                                      cached_tokens=produced[0].cached_tokens, logprobs=logprobs)
                last = items[-1]
                if last is _END:
                    finished = True
                    return
                if isinstance(last, BaseException):
                    finished = True
                    if isinstance(last, EngineDead):
                        self._discard(model, engine)
                    raise last
        finally:
            if not finished:
                # The caller stopped early (cancel, lost lease, error): free the engine slot.
                self.abort(model, request_id)
                future.cancel()

    def abort(self, model: str, request_id: str) -> None:
        engine = self.engines().get(model)
        if engine is not None:
            self.call(engine.abort(request_id))

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
        cleanup.add_done_callback(lambda done: done.exception() and log.error(
            "shutting down the dead engine for %s failed: %s", model, done.exception()))


class _Handoff:
    """What the engine loop produced for one request, until its task thread takes it.

    A deque and an event rather than a queue.Queue: the loop appends one chunk per engine
    step and the task thread takes all of them at once, so neither takes a lock per token
    (the Queue's locks cost the task thread 4 µs of its 77 per token)."""

    def __init__(self) -> None:
        self._items: deque[Any] = deque()
        self._ready = threading.Event()

    def put(self, item: Any) -> None:
        self._items.append(item)
        # Set only when clear: the taker clears before it takes, so an item appended after
        # that sees the event clear and sets it, and one appended before is taken.
        if not self._ready.is_set():
            self._ready.set()

    def wait(self, timeout: float) -> bool:
        """True once something was put (perhaps taken meanwhile), False after ``timeout``."""
        return bool(self._items) or self._ready.wait(timeout)

    def first(self) -> Any:
        return self._items[0] if self._items else None

    def take(self) -> list[Any]:
        """Everything put so far, up to and including the first exception or end."""
        self._ready.clear()
        taken: list[Any] = []
        while self._items:
            taken.append(self._items.popleft())
            if isinstance(taken[-1], BaseException) or taken[-1] is _END:
                break
        return taken


def create_engine(model: str) -> Engine:
    entry = settings.MODEL_REGISTRY[model]
    if entry["engine"] == "echo":
        from responses_app.engines.echo import EchoEngine

        return EchoEngine(default_token_delay_ms=settings.ECHO_TOKEN_DELAY_MS)
    if entry["engine"] == "vllm":
        from responses_app.engines.vllm_engine import VllmEngine

        return VllmEngine(model, entry)
    raise ValueError(f"model {model!r}: unknown engine {entry['engine']!r}")


_host: EngineHost | None = None
_host_lock = threading.Lock()


def engine_host() -> EngineHost:
    """This process's host, created on first use."""
    global _host
    with _host_lock:
        if _host is None:
            _host = EngineHost()
        return _host
