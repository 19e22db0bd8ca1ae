"""One cancel-flag poll per worker process for every response that the process runs
(and, with it, the steering flag: input queued over the WebSocket, sessions/steering.py).

A response's task thread must notice a cancel within a second. Polling the row from
each task thread costs one query per response every CANCEL_POLL_S; with tens of
responses per worker, those queries take CPU from the engine. This thread asks once for
all of them. (A deleted row is noticed by the lease-guarded write of the next batch.)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from django.db import close_old_connections
from django.db.models import Q

from responses_app.lib.db_outage import DATABASE_DOWN, reconnect
from responses_app.models import Response

log = logging.getLogger(__name__)
CANCEL_POLL_S = 0.5


class CancelWatch:
    def __init__(self, interval_s: float = CANCEL_POLL_S) -> None:
        self.interval_s = interval_s
        self._cancel_requested: dict[str, bool] = {}
        self._steer_requested: set[str] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    @contextmanager
    def watching(self, response_id: str) -> Iterator[None]:
        with self._lock:
            self._cancel_requested[response_id] = False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="cancel-watch", daemon=True)
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                self._cancel_requested.pop(response_id, None)
                self._steer_requested.discard(response_id)

    def cancel_requested(self, response_id: str) -> bool:
        """As of the last poll (at most ``interval_s`` old)."""
        with self._lock:
            return self._cancel_requested.get(response_id, False)

    def steer_requested(self, response_id: str) -> bool:
        """As of the last poll: steering input is queued for the response."""
        with self._lock:
            return response_id in self._steer_requested

    def poll(self) -> None:
        with self._lock:
            watched = list(self._cancel_requested)
        if not watched:
            return
        flagged = list(Response.objects.filter(pk__in=watched).filter(Q(cancel_requested=True) | Q(
            steer_requested=True)).values_list("pk", "cancel_requested", "steer_requested"))
        with self._lock:
            for response_id, cancel, steer in flagged:
                if response_id in self._cancel_requested:  # not finished meanwhile
                    self._cancel_requested[response_id] |= cancel
                    if steer:
                        self._steer_requested.add(response_id)

    def _run(self) -> None:
        while True:
            time.sleep(self.interval_s)
            with self._lock:
                if not self._cancel_requested:  # an idle worker leaves the database alone
                    continue
            try:
                close_old_connections()
                self.poll()
            except DATABASE_DOWN as error:  # a database restart: the next poll reconnects
                log.warning("cancel watch: polling failed: %s", error)
                reconnect()
            except Exception:
                log.exception("cancel watch: polling failed")
                reconnect()


_watch = CancelWatch()


def cancel_watch() -> CancelWatch:
    return _watch
