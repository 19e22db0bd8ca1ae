"""The server in this process: the ASGI application that Daphne serves, called over an
httpx transport, and the worker's task run on threads of this process.

For the tests that only send requests and read answers (bad requests, isolation, the
CRUD of conversations, containers, webhooks and schedules): they need no Daphne, Celery or
beat, so they run without the live stack, in `make test-fast` and under pytest-xdist. The
views reach the database from threads of their own (responses_app/lib/asyncdb.py), so rows
are committed, as with the live stack: tests use ``db_access`` and tenants of their own,
never pytest-django's rolled-back transaction.

What stays live: streams read as they are written, WebSockets, kills and restarts, beat,
vLLM, Daphne's own refusals (responses_app/api/daphne_edge.py) and the browser.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

import httpx

T = TypeVar("T")


class AppTransport(httpx.BaseTransport):
    """A synchronous httpx transport to the ASGI application, on an event loop of its own
    (one thread for the life of the transport, as Daphne's one loop): the doorbell's hub and
    the database thread pools keep their state between requests, as in a web process. The
    body is read whole before the answer returns, so a stream arrives when it has ended."""

    def __init__(self) -> None:
        from project.asgi import application

        self._asgi = httpx.ASGITransport(app=application, client=("127.0.0.1", 40000))
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="in-process-web", daemon=True)
        self._thread.start()

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        body = request.read()

        async def call() -> tuple[int, httpx.Headers, bytes]:
            sent = httpx.Request(request.method, request.url, headers=request.headers, content=body)
            answer = await self._asgi.handle_async_request(sent)
            raw = b"".join([chunk async for chunk in answer.stream])
            return answer.status_code, answer.headers, raw

        status, headers, raw = self._run(call())
        return httpx.Response(status, headers=headers, content=raw, request=request)

    def close(self) -> None:
        """Nothing: every client of the app shares this transport, and closes it when it is done."""

    def shutdown(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)


class InProcessApp:
    """What the request-only tests need of a stack: a base URL and a transport to it."""

    base_url = "http://testserver/v1"

    def __init__(self) -> None:
        self.transport = AppTransport()

    def close(self) -> None:
        self.transport.shutdown()


class InlineWorker:
    """The worker's task, run on threads of this process instead of through the broker
    (several, as a live worker has task threads): a background create is answered first,
    then its response runs, as with Celery."""

    THREADS = 8

    def __init__(self) -> None:
        self._threads = ThreadPoolExecutor(self.THREADS, thread_name_prefix="in-process-worker")
        self._pending: list[Any] = []

    def send(self, response: Any, task_id: str, priority: int | None = None, hint: Any = None,
             spilled_from: str | None = None) -> None:
        """task_queue.send's place: every response runs here, wherever dispatch would send it."""
        self._pending.append(self._threads.submit(self._run, response.pk))

    def send_batch_task(self, task: str, batch_id: str) -> None:
        from responses_app.batches import runner
        from responses_app.dispatch.batch_slots import VALIDATE_BATCH_TASK

        step = runner.validate_batch if task == VALIDATE_BATCH_TASK else runner.advance_batch
        self._pending.append(self._threads.submit(self._in_thread, step, batch_id))

    def send_ingest_task(self, store_file_id: int) -> None:
        from responses_app.vector_stores import ingest

        self._pending.append(self._threads.submit(self._in_thread, ingest.ingest, store_file_id))

    @classmethod
    def _run(cls, response_id: str) -> None:
        from responses_app.worker.run import run_response

        cls._in_thread(run_response, response_id)

    @staticmethod
    def _in_thread(task: Any, *args: Any) -> None:
        from django.db import close_old_connections

        close_old_connections()
        try:
            task(*args)
        finally:
            close_old_connections()

    def drain(self) -> None:
        """Wait for every response sent so far (and raise what one of them raised)."""
        while self._pending:
            self._pending.pop(0).result(timeout=60)

    def close(self) -> None:
        self.drain()
        self._threads.shutdown(wait=True)
