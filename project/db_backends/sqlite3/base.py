"""SQLite whose writers take turns: every write transaction first takes this process's
writer lock, then an exclusive ``flock`` on ``<database>.writers``, then SQLite's own lock.

SQLite lets one writer in at a time and makes the others poll: its busy handler sleeps
1, 2, 5, ... then 100 ms between tries. While a worker's task threads commit event
batches back to back, a create that has waited a while polls every 100 ms and finds the
lock taken nearly every time: the first event of a response waited seconds behind the
batches of the others. A blocked ``flock`` is woken by the kernel when the lock is
released, so every waiting process gets its chance at each release; and since a
process's threads queue on its own lock first, each process sends one writer at a time:
the web process's creates get every other turn however many task threads a worker has.

A write outside a transaction (an ORM ``update()`` or ``save()`` in autocommit) is a
transaction of its own in SQLite, so it takes its turn the same way: without it, such a
write bypassed the queue, polled for SQLite's lock while the others held it (p50 10 ms
for a one-row UPDATE in a batch's run), and held that lock while a create in the queue's
turn polled behind it.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable
from typing import Any

from django.db.backends.sqlite3 import base

_process_writer = threading.Lock()
# Statements that never write, or that start and end transactions (a transaction takes its
# turn as it starts, in _start_transaction_under_autocommit): everything else outside a
# transaction waits for its turn.
_NOT_A_WRITE = ("SELECT", "PRAGMA", "EXPLAIN", "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE")


class DatabaseWrapper(base.DatabaseWrapper):
    _writers_lock: int | None = None
    _holds_writers_lock = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.execute_wrappers.append(self._write_takes_its_turn)

    def get_new_connection(self, conn_params: dict[str, Any]) -> Any:
        connection = super().get_new_connection(conn_params)
        if not self.is_in_memory_db():
            self._writers_lock = os.open(f"{self.settings_dict['NAME']}.writers", os.O_RDWR | os.O_CREAT, 0o600)
        return connection

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            self._release_writers_lock()
            if self._writers_lock is not None:
                os.close(self._writers_lock)
                self._writers_lock = None

    def _write_takes_its_turn(self, execute: Callable, sql: str, params: Any, many: bool, context: dict) -> Any:
        if (self._writers_lock is None or self._holds_writers_lock or self.in_atomic_block
                or sql.lstrip()[:9].upper().startswith(_NOT_A_WRITE)):
            return execute(sql, params, many, context)
        self._take_writers_lock()
        try:
            return execute(sql, params, many, context)
        finally:
            self._release_writers_lock()

    def _take_writers_lock(self) -> None:
        if self._writers_lock is None or self._holds_writers_lock:
            return
        _process_writer.acquire()
        try:
            fcntl.flock(self._writers_lock, fcntl.LOCK_EX)  # releases the GIL while it waits
        except BaseException:
            _process_writer.release()
            raise
        self._holds_writers_lock = True

    def _start_transaction_under_autocommit(self) -> None:
        self._take_writers_lock()
        try:
            super()._start_transaction_under_autocommit()
        except BaseException:
            self._release_writers_lock()
            raise

    def _commit(self) -> None:
        try:
            super()._commit()
        finally:
            self._release_writers_lock()

    def _rollback(self) -> None:
        try:
            super()._rollback()
        finally:
            self._release_writers_lock()

    def _release_writers_lock(self) -> None:
        if self._holds_writers_lock:
            self._holds_writers_lock = False
            try:
                assert self._writers_lock is not None  # held only while open (_close releases first)
                fcntl.flock(self._writers_lock, fcntl.LOCK_UN)
            finally:
                _process_writer.release()
