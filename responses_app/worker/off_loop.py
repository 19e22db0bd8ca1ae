"""What the responses on the engine loop hand to threads: ORM work and tool calls.

The loop parses tokens and builds events for every response of the process; it never
waits on the database or on a tool. A response's ORM work (its history and prompt, its
end) runs in a small pool of database threads, its event batches go to the process's
committer (worker/flusher.py), and its server-side tool calls run in a pool of tool
threads, sized for waits, not for CPU.

A caller that runs a response inside a transaction of its own (a test in one) shares its
connection: the pool thread uses it while the caller waits for the response to end, so
the response's reads and writes see the caller's rows, as they did when the caller's
thread ran the response itself.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import ParamSpec, TypeVar

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, close_old_connections, connections
from django.db.backends.base.base import BaseDatabaseWrapper

P = ParamSpec("P")
T = TypeVar("T")

_database_threads = ThreadPoolExecutor(settings.WORKER_DB_THREADS, thread_name_prefix="worker-db")
_tool_threads = ThreadPoolExecutor(settings.WORKER_TOOL_THREADS, thread_name_prefix="worker-tool")


class OffLoop:
    """One response's way off the loop (``shared``: the connection of a caller inside a
    transaction, or None)."""

    def __init__(self, shared: BaseDatabaseWrapper | None = None) -> None:
        self.shared = shared

    @classmethod
    def for_caller(cls) -> OffLoop:
        """The calling thread's: sharing its connection while it is inside a transaction."""
        caller = connections[DEFAULT_DB_ALIAS]
        return cls(caller if caller.in_atomic_block else None)

    async def database(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function`` in a database thread."""
        return await self._in(_database_threads, function, *args, **kwargs)

    async def tool(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """``function`` (a tool call, with the ORM work around it) in a tool thread."""
        return await self._in(_tool_threads, function, *args, **kwargs)

    async def _in(self, executor: ThreadPoolExecutor, function: Callable[..., T], *args: object,
                  **kwargs: object) -> T:
        call = functools.partial(self._in_thread, function, *args, **kwargs)
        return await asyncio.get_running_loop().run_in_executor(executor, call)

    def _in_thread(self, function: Callable[..., T], *args: object, **kwargs: object) -> T:
        if self.shared is None:
            # Pool threads outlive responses: drop a connection that broke (a database
            # restart) or outlived CONN_MAX_AGE before using it.
            close_old_connections()
            return function(*args, **kwargs)
        # No lock: the response's steps take turns on the connection (a tool thread that
        # commits waits while a database thread does it), and a lock would deadlock them.
        connections[DEFAULT_DB_ALIAS] = self.shared
        try:
            return function(*args, **kwargs)
        finally:
            del connections[DEFAULT_DB_ALIAS]
