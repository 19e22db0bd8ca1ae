"""Riding out a database restart: the errors that mean "down for now", and reconnecting.

A refused or broken connection is an OperationalError or InterfaceError; Django keeps
the broken connection on the thread until it is closed, so whoever retries closes it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ParamSpec, TypeVar

from django.db import InterfaceError, OperationalError, connection

P = ParamSpec("P")
T = TypeVar("T")

DATABASE_DOWN = (OperationalError, InterfaceError)
RETRY_INTERVAL_S = 0.5


def reconnect() -> None:
    """Drop this thread's connection; its next query opens a new one."""
    try:
        connection.close()
    except DATABASE_DOWN:  # closing a connection whose server is gone
        pass


def read_on_a_live_connection(function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a read; should it meet a connection that a database restart broke (a pool
    thread's, idle since), once more on a new one. Only for reads: a write may have landed."""
    try:
        return function(*args, **kwargs)
    except DATABASE_DOWN:
        reconnect()
        return function(*args, **kwargs)
