"""One transaction for the batches of all of a worker process's responses.

The process's flusher (worker/flusher.py) hands the batches of all its responses to the
committer thread at once, every EVENT_FLUSH_INTERVAL_S at most, and the committer commits
them together (stream/store.save_group): a node streaming 256 responses commits a group
per flush interval instead of a transaction, a commit and a PUBLISH per response, which
one interpreter could not keep up with (bench/costs.py --node). What is handed over while
a group commits goes in the next one.

What each batch gets is what save_events gives it: its cancel flag, LeaseLost when its
lease is gone (nothing of it written), or the database's error. A group that fails for any
other reason than the database being down is committed again one batch at a time, so that
one response's error (an IntegrityError after a commit that landed unheard) stays its own.
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
# A batch's outcome: its cancel flag, or what its commit raised.
Outcome = bool | BaseException


@dataclass
class _Handed:
    batches: list[Batch]
    outcomes: Future[list[Outcome]] = field(default_factory=Future)


class GroupCommitter:
    def __init__(self) -> None:
        self._pending: list[_Handed] = []
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
        self._thread.start()

    def submit(self, batches: list[Batch]) -> Future[list[Outcome]]:
        """Commit ``batches`` with whatever else is handed over meanwhile; the future of
        their outcomes, in order."""
        handed = _Handed(batches)
        with self._ready:
            self._pending.append(handed)
            self._ready.notify()
        return handed.outcomes

    def _run(self) -> None:
        while True:
            with self._ready:
                while not self._pending:
                    self._ready.wait()
                group, self._pending = self._pending, []
            self._commit(group)

    def _commit(self, group: list[_Handed]) -> None:
        batches = [batch for handed in group for batch in handed.batches]
        outcomes = self._outcomes(batches)
        start = 0
        for handed in group:
            handed.outcomes.set_result(outcomes[start:start + len(handed.batches)])
            start += len(handed.batches)

    def _outcomes(self, batches: list[Batch]) -> list[Outcome]:
        try:
            renewed = save_group(batches)
        except DATABASE_DOWN as error:
            reconnect()  # this thread's connection; each writer keeps its batch and hands it again
            return [error] * len(batches)
        except Exception:
            log.warning("a group of %d batches failed; committing them one by one", len(batches), exc_info=True)
            return [_commit_alone(batch) for batch in batches]
        return [renewed[batch.response.pk] if batch.response.pk in renewed else LeaseLost(batch.response.pk)
                for batch in batches]


def _commit_alone(batch: Batch) -> Outcome:
    try:
        return save_events(batch.response, batch.owner, batch.events, batch.items)
    except BaseException as error:  # noqa: BLE001 - the writer's, raised on its side
        if isinstance(error, DATABASE_DOWN):
            reconnect()
        return error


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
    [outcome] = group_committer().submit([batch]).result()
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome
