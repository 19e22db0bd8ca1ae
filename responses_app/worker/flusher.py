"""The engine loop's flusher: the pending events of all of a worker process's responses,
committed as one group at most every EVENT_FLUSH_INTERVAL_S.

A response on the loop never waits for its commits while it streams: its batch writer
marks it due (``due``), and at the next group the flusher drains every due response's
builder, hands the batches to the committer thread in one submission
(worker/group_commit.py) and gives each writer its outcome (its cancel flag, LeaseLost,
or the database's error). A node of 256 responses streaming at 8,000 tokens/s thus makes
20 groups a second, not 5,000 hand-offs. A writer that must know its events are stored
(before a tool runs, before its end) awaits ``flush``: the group after any in flight.

Groups follow one another, so a response's batches are committed in order. A response
whose code runs in a tool thread meanwhile (worker/off_loop.py) is "lent": its builder is
only drained when that thread asks and waits (``flush`` from the thread).
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from django.conf import settings
from django.db import IntegrityError

from responses_app.lib.db_outage import DATABASE_DOWN, RETRY_INTERVAL_S
from responses_app.stream.store import Batch, save_events
from responses_app.worker.group_commit import Outcome, group_committer
from responses_app.worker.off_loop import OffLoop


class BatchWriter(Protocol):
    """What the flusher needs of a response's batch writer (worker/batch_writer.py)."""

    off_loop: OffLoop
    lent: bool
    broke: bool

    def take_batch(self) -> Batch: ...

    def settle(self, outcome: Outcome) -> None: ...

    async def landed(self) -> bool: ...


class Flusher:
    def __init__(self) -> None:
        self._due: dict[BatchWriter, None] = {}  # in the order they became due
        self._asked: dict[BatchWriter, None] = {}  # those whose flush awaits the next group
        self._next_group: asyncio.Future[None] | None = None
        self._wake: asyncio.Event | None = None
        self._task: asyncio.Task[None] | None = None
        self._last_group = 0.0

    def due(self, writer: BatchWriter) -> None:
        """Commit the writer's pending events (or renew its lease) with the next group."""
        self._due[writer] = None
        self._start()

    async def flush(self, writer: BatchWriter) -> None:
        """Until a group that began after this call (with the writer's events) has committed."""
        self._due[writer] = None
        self._asked[writer] = None
        if self._next_group is None:
            self._next_group = asyncio.get_running_loop().create_future()
        next_group = self._next_group
        self._start()
        assert self._wake is not None
        self._wake.set()
        await next_group

    def _start(self) -> None:
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        assert self._wake is not None
        try:
            while self._due:
                wait = self._last_group + settings.EVENT_FLUSH_INTERVAL_S - loop.time()
                if wait > 0 and not self._asked:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), wait)
                    except TimeoutError:
                        pass
                self._last_group = loop.time()
                asked, self._asked = self._asked, {}
                writers = [writer for writer in self._due if not writer.lent or writer in asked]
                self._due = {writer: None for writer in self._due if writer.lent and writer not in asked}
                finished, self._next_group = self._next_group, None
                try:
                    await self._commit(writers)
                finally:
                    if finished is not None:
                        finished.set_result(None)
                if self._due and all(writer.lent for writer in self._due) and not self._asked:
                    break  # what is left waits for its tool thread to ask
        finally:
            self._task = None

    async def _commit(self, writers: list[BatchWriter]) -> None:
        shared = [writer for writer in writers if writer.off_loop.shared is not None]
        grouped = [writer for writer in writers if writer.off_loop.shared is None]
        batches = [writer.take_batch() for writer in grouped]
        outcomes: list[Outcome] = []
        if batches:
            outcomes = await asyncio.wrap_future(group_committer().submit(batches))
        for writer in shared:
            # A caller's transaction (a test's): the committer's connection would not see its rows.
            batch = writer.take_batch()
            try:
                outcomes.append(await writer.off_loop.database(save_events, batch.response, batch.owner,
                                                               batch.events, batch.items))
            except Exception as error:  # noqa: BLE001 - the writer's outcome
                outcomes.append(error)
        for writer, outcome in zip(grouped + shared, outcomes, strict=True):
            if isinstance(outcome, IntegrityError) and writer.broke and await writer.landed():
                outcome = False  # the commit landed while the connection broke
            writer.settle(outcome)
            if isinstance(outcome, DATABASE_DOWN):
                asyncio.get_running_loop().call_later(RETRY_INTERVAL_S, self.due, writer)


_flushers: dict[asyncio.AbstractEventLoop, Flusher] = {}


def flusher() -> Flusher:
    """The running loop's flusher."""
    loop = asyncio.get_running_loop()
    if loop not in _flushers:
        _flushers[loop] = Flusher()
    return _flushers[loop]
