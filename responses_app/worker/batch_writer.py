"""A worker's writes for one response: its events in batches, its lease, its end.

The builder's events are committed at most EVENT_FLUSH_INTERVAL_S after they appear, with
the other responses' batches of this process (worker/group_commit.py); the lease is
renewed at least every LEASE_RENEW_S; the cancel flag is read from the process's
cancel watch in between, so a cancel is noticed within a second.

A database restart is ridden out: a batch that could not be committed is kept and tried
again until the lease that the last commit renewed runs out (after that the reaper may
take the response over), while the engine goes on generating.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import IntegrityError

from responses_app.lib.db_outage import DATABASE_DOWN, RETRY_INTERVAL_S, reconnect
from responses_app.models import Response, ResponseStatus
from responses_app.services.ended import end_response
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import Batch, LeaseLost
from responses_app.worker.cancel_watch import cancel_watch
from responses_app.worker.off_loop import OffLoop

log = logging.getLogger(__name__)
# Retries stop this long before the lease would expire, so that a late commit never
# races the reaper.
LEASE_MARGIN_S = 1.0
LOST_OUTPUT_ERROR = {
    "code": "server_error",
    "message": "The database connection broke while this response's last output was being saved; "
               "the response was ended without it.",
}


class CancelRequested(Exception):
    pass


@dataclass
class BatchWriter:
    """Commits the builder's events and renews the lease; raises CancelRequested once the
    cancel flag is seen, and LeaseLost once the lease is gone. Its coroutines run on the
    engine loop; a tool call in its thread uses the ``*_from_thread`` forms."""

    response: Response
    owner: str
    builder: EventBuilder
    off_loop: OffLoop
    loop: asyncio.AbstractEventLoop
    last_flush: float = field(default_factory=time.monotonic)
    # Events and items drained from the builder whose commit failed (the database broke).
    _unsaved: tuple[list[dict[str, Any]], list[tuple[int, dict[str, Any]]]] | None = None

    async def tick(self) -> None:
        now = time.monotonic()
        if self.builder.has_pending_events and now - self.last_flush >= settings.EVENT_FLUSH_INTERVAL_S:
            cancel = await self.flush()
        elif now - self.last_flush >= settings.LEASE_RENEW_S:
            cancel = await self.flush()
        else:
            cancel = cancel_watch().cancel_requested(self.response.pk)
        if cancel:
            raise CancelRequested()

    async def flush(self) -> bool:
        """Commit now; returns the cancel flag."""
        if self._unsaved is None:
            self._unsaved = self.builder.drain()
        events, items = self._unsaved
        broke = False
        while True:
            try:
                cancel = await self.off_loop.commit(Batch(self.response, self.owner, events, items))
                break
            except IntegrityError:
                # After a broken connection the commit may have landed without our hearing of it.
                if not (broke and events and await self.off_loop.database(self._committed,
                                                                          events[-1]["sequence_number"])):
                    raise
                cancel = False
                break
            except DATABASE_DOWN as error:
                broke = True
                await self._wait_for_database(error)
        self._unsaved = None
        self.last_flush = time.monotonic()
        return cancel

    def flush_from_thread(self) -> bool:
        return asyncio.run_coroutine_threadsafe(self.flush(), self.loop).result()

    def tick_from_thread(self) -> None:
        asyncio.run_coroutine_threadsafe(self.tick(), self.loop).result()

    async def end(self, status: str, *, error: dict[str, Any] | None, incomplete_details: dict[str, Any] | None,
                  usage: dict[str, Any]) -> None:
        """Write what is pending with the terminal state, and what follows a response's end
        (services/ended.end_response). Raises LeaseLost when another party ended or removed
        the response first."""
        if self._unsaved is not None:
            await self.flush()
        builder: EventBuilder | None = self.builder
        next_sequence_number = self.builder.next_sequence_number
        while True:
            try:
                ended = await self.off_loop.database(
                    end_response, self.response.pk, status, error=error, incomplete_details=incomplete_details,
                    usage=usage, builder=builder, lease_owner=self.owner)
                break
            except DATABASE_DOWN as database_error:
                if builder is not None and builder.next_sequence_number != next_sequence_number:
                    # The broken transaction took the builder's last events with it: end from
                    # the committed rows instead (as the reaper would), failed, saying so.
                    builder, status, error, incomplete_details = None, ResponseStatus.FAILED, LOST_OUTPUT_ERROR, None
                await self._wait_for_database(database_error)
        if not ended:
            raise LeaseLost(self.response.pk)

    async def _wait_for_database(self, error: Exception) -> None:
        """Sleep before the next try, or raise ``error`` once the lease is nearly out."""
        if time.monotonic() + RETRY_INTERVAL_S > self.last_flush + settings.LEASE_TTL_S - LEASE_MARGIN_S:
            raise error
        log.warning("%s: the database is unavailable (%s); trying again", self.response.pk, error)
        await self.off_loop.database(reconnect)
        await asyncio.sleep(RETRY_INTERVAL_S)

    def _committed(self, sequence_number: int) -> bool:
        return Response.objects.filter(pk=self.response.pk, last_sequence_number__gte=sequence_number).exists()
