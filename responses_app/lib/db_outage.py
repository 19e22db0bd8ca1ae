"""Riding out a database restart: the errors that mean "down for now", and reconnecting.

A refused or broken connection is an OperationalError or InterfaceError; Django keeps
the broken connection on the thread until it is closed, so whoever retries closes it.
"""

from __future__ import annotations

from django.db import InterfaceError, OperationalError, connection

DATABASE_DOWN = (OperationalError, InterfaceError)
RETRY_INTERVAL_S = 0.5


def reconnect() -> None:
    """Drop this thread's connection; its next query opens a new one."""
    try:
        connection.close()
    except DATABASE_DOWN:  # closing a connection whose server is gone
        pass
