"""One transaction for the batches of all of a worker process's responses.

Each response on the engine loop hands its batch (BatchWriter.flush) to the process's
committer thread and awaits it. The committer takes every batch handed over meanwhile and commits
them together (stream/store.save_group): a node streaming 256 responses commits a few
groups per flush interval instead of a transaction, a commit and a PUBLISH per response,
which one interpreter could not keep up with (bench/costs.py --node). Alone, a batch is
committed at once: the wait is one thread hop.

What a writer sees is what save_events gives it: its cancel flag, LeaseLost when its lease
is gone (nothing of it written), or the database's error. A group that fails for any other
reason than the database being down is committed again one batch at a time, so that one
response's error (an IntegrityError after a commit that landed unheard) stays its own.
"""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from django.db import connection

from responses_app.lib.db_outage import DATABASE_DOWN, reconnect
from responses_app.stream.store import Batch, LeaseLost, save_events, save_group

log = logging.getLogger(__name__)


@dataclass
class _Handed:
    batch: Batch
    cancel: Future[bool] = field(default_factory=Future)


class GroupCommitter:
    def __init__(self) -> None:
        self._pending: list[_Handed] = []
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
        self._thread.start()

    def submit(self, batch: Batch) -> Future[bool]:
        """Commit ``batch`` with whatever else is handed over meanwhile; the future of its
        cancel flag."""
        handed = _Handed(batch)
        with self._ready:
            self._pending.append(handed)
            self._ready.notify()
        return handed.cancel

    def save(self, batch: Batch) -> bool:
        return self.submit(batch).result()

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._pending:
                    self._ready.wait()
                group, self._pending = self._pending, []
            self._commit(group)

    def _commit(self, group: list[_Handed]) -> None:
        try:
            renewed = save_group([handed.batch for handed in group])
        except DATABASE_DOWN as error:
            reconnect()  # this thread's connection; each writer waits and hands its batch again
            for handed in group:
                handed.cancel.set_exception(error)
            return
        except Exception:
            log.warning("a group of %d batches failed; committing them one by one", len(group), exc_info=True)
            self._commit_each(group)
            return
        for handed in group:
            cancel = renewed.get(handed.batch.response.pk)
            if cancel is None:
                handed.cancel.set_exception(LeaseLost(handed.batch.response.pk))
            else:
                handed.cancel.set_result(cancel)

    def _commit_each(self, group: list[_Handed]) -> None:
        for handed in group:
            batch = handed.batch
            try:
                handed.cancel.set_result(save_events(batch.response, batch.owner, batch.events, batch.items))
            except BaseException as error:  # noqa: BLE001 - the writer's, raised in its thread
                if isinstance(error, DATABASE_DOWN):
                    reconnect()
                handed.cancel.set_exception(error)


_committer: GroupCommitter | None = None
_committer_pid = 0
_committer_lock = threading.Lock()


def group_committer() -> GroupCommitter:
    """This process's committer (a forked child starts its own)."""
    global _committer, _committer_pid
    with _committer_lock:
        if _committer is None or _committer_pid != os.getpid():
            _committer, _committer_pid = GroupCommitter(), os.getpid()
        return _committer


def save(batch: Batch) -> bool:
    """store.save_events, committed with the other responses' batches of this process. A
    caller inside a transaction of its own (a test's) saves in it, as save_events does:
    the committer's connection would not see its rows."""
    if connection.in_atomic_block:
        return save_events(batch.response, batch.owner, batch.events, batch.items)
    return group_committer().save(batch)
