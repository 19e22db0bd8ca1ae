"""Database work for the async views (create, retrieve, SSE readers).

asgiref's default runs every sync call of every request on one shared thread, which
serializes all creates and stream reads of a web process behind each other. These calls
are independent, so they run in pools of threads, each thread with its own connection:
``db`` for the work of a request (authentication, a create, a retrieve) and
``stream_db`` for the reads of the streams that follow responses. A burst of creates
arriving while many responses stream would otherwise wait behind the streams' reads
for a thread, where its first event waits too.

A pool thread's connection outlives requests, so one that sat idle through a database
restart is broken without knowing it: after IDLE_CHECK_S without use it is tested (one
round trip) before a call trusts it, rather than failing that call with a 503.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import close_old_connections, connection

from responses_app.lib.db_outage import reconnect

P = ParamSpec("P")
T = TypeVar("T")

IDLE_CHECK_S = 1.0
_last_call = threading.local()
_request_threads = ThreadPoolExecutor(settings.WEB_REQUEST_DB_THREADS, thread_name_prefix="db-request")
_stream_threads = ThreadPoolExecutor(settings.WEB_STREAM_DB_THREADS, thread_name_prefix="db-stream")


def _in_pool(function: Callable[P, T], executor: ThreadPoolExecutor) -> Callable[P, Awaitable[T]]:
    # Straight to the executor, in a copy of the caller's context (as asgiref's SyncToAsync
    # does): building a SyncToAsync and its functools.wraps per call was a measurable part
    # of the event loop's time, which every stream read and every create pays.
    async def in_pool(*args: P.args, **kwargs: P.kwargs) -> T:
        call = functools.partial(_in_pool_thread, function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(executor, contextvars.copy_context().run, call)

    return in_pool


def _in_pool_thread(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    # Pool threads outlive requests: drop a connection that broke (a database restart) or
    # outlived CONN_MAX_AGE before using it, as Django does per request.
    close_old_connections()
    _drop_if_dead_after_idle()
    try:
        return function(*args, **kwargs)
    finally:
        _last_call.at = time.monotonic()


def _drop_if_dead_after_idle() -> None:
    idle = time.monotonic() - getattr(_last_call, "at", 0.0) >= IDLE_CHECK_S
    if idle and connection.connection is not None and not connection.is_usable():
        reconnect()


def db(function: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """``function`` as a coroutine run in a request thread."""
    return _in_pool(function, _request_threads)


def stream_db(function: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    """``function`` as a coroutine run in a stream-reading thread."""
    return _in_pool(function, _stream_threads)
