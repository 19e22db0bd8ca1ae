"""Ending the asyncio tasks that a connection started, before the connection's own
coroutine ends.

Daphne's shutdown cancels each application instance and waits for it, but not for the
tasks it started: a task whose cancel is requested yet never runs again before the loop
stops is collected pending ("Task was destroyed but it is pending!")."""

from __future__ import annotations

import asyncio


async def cancel_and_wait(task: asyncio.Task | None) -> None:
    """Cancel ``task`` and return once it has ended (whatever it raised)."""
    if task is None or task.done():
        return
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
