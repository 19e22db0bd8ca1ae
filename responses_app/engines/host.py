"""The engine host: one asyncio loop thread and one engine per model, per worker process.

Celery's threads pool runs many responses at once in one process; each task thread
hands its request to the shared loop, where the engine batches them (vLLM's continuous
batching, in the next issue). Task threads never touch the loop's objects directly:
chunks come back through a thread-safe queue.
"""

from __future__ import annotations

import asyncio
import logging
import queue
import threading
from collections.abc import Iterator
from concurrent.futures import Future

from django.conf import settings

from .base import Engine, EngineChunk, SamplingParams

log = logging.getLogger(__name__)
_END = object()


class EngineHost:
    def __init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="engine-loop", daemon=True)
        self._thread.start()
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()

    def engine(self, model: str) -> Engine:
        with self._lock:
            if model not in self._engines:
                self._engines[model] = create_engine(model)
            return self._engines[model]

    def engines(self) -> dict[str, Engine]:
        with self._lock:
            return dict(self._engines)

    def stream(
        self, model: str, prompt_token_ids: list[int], params: SamplingParams, request_id: str, poll_s: float = 0.25
    ) -> Iterator[EngineChunk | None]:
        """Yield chunks as the engine produces them, and None every ``poll_s`` without
        output, so the caller can check for cancellation while the engine is quiet.
        An engine error is re-raised in the caller's thread."""
        engine = self.engine(model)
        chunks: queue.Queue = queue.Queue()

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
                try:
                    item = chunks.get(timeout=poll_s)
                except queue.Empty:
                    yield None
                    continue
                if item is _END:
                    finished = True
                    return
                if isinstance(item, BaseException):
                    finished = True
                    raise item
                yield item
        finally:
            if not finished:
                # The caller stopped early (cancel, lost lease, error): free the engine slot.
                self.abort(model, request_id)
                future.cancel()

    def abort(self, model: str, request_id: str) -> None:
        engine = self.engine(model)
        asyncio.run_coroutine_threadsafe(engine.abort(request_id), self._loop).result(timeout=10)

    def call(self, coroutine) -> object:
        """Run a coroutine on the engine loop (for inspection, e.g. in tests)."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)


def create_engine(model: str) -> Engine:
    entry = settings.MODEL_REGISTRY[model]
    if entry["engine"] == "echo":
        from .echo import EchoEngine

        return EchoEngine(default_token_delay_ms=settings.ECHO_TOKEN_DELAY_MS)
    raise ValueError(f"model {model!r}: unknown engine {entry['engine']!r}")


_host: EngineHost | None = None
_host_lock = threading.Lock()


def engine_host() -> EngineHost:
    """This process's host, created on first use (after a fork, in the worker child)."""
    global _host
    with _host_lock:
        if _host is None:
            _host = EngineHost()
        return _host
