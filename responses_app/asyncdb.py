"""Database work for the async views (create, retrieve, SSE readers).

asgiref's default runs every sync call of every request on one shared thread, which
serializes all creates and stream reads of a web process behind each other. These calls
are independent, so they run in a pool of threads, each with its own connection.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import ParamSpec, TypeVar

from asgiref.sync import sync_to_async
from django.db import close_old_connections

P = ParamSpec("P")
T = TypeVar("T")


def db(function: Callable[P, T]) -> Callable[P, Awaitable[T]]:
    @functools.wraps(function)
    def in_pool_thread(*args: P.args, **kwargs: P.kwargs) -> T:
        # Pool threads outlive requests: drop a connection that broke (a database
        # restart) or outlived CONN_MAX_AGE before using it, as Django does per request.
        close_old_connections()
        return function(*args, **kwargs)

    return sync_to_async(in_pool_thread, thread_sensitive=False)
