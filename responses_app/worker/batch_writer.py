"""A worker's writes for one response: its events in batches, its lease, its end.

The builder's events are committed at most EVENT_FLUSH_INTERVAL_S after they appear, in
one group with the other responses' of this process (worker/flusher.py, then
worker/group_commit.py); the lease is renewed at least every LEASE_RENEW_S; the cancel
flag comes back with each commit and from the process's cancel watch, so a cancel is
noticed within a second. The response never waits for a commit while it streams; it
learns a commit's outcome at its next tick.

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

from responses_app.lib.db_outage import DATABASE_DOWN, RETRY_INTERVAL_S, reconnect
from responses_app.models import Response, ResponseStatus
from responses_app.services.ended import end_response
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import Batch, LeaseLost
from responses_app.worker.cancel_watch import cancel_watch
from responses_app.worker.flusher import flusher
from responses_app.worker.group_commit import Outcome
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


@dataclass(eq=False)
class BatchWriter:
    """Commits the builder's events and renews the lease; raises CancelRequested once the
    cancel flag is seen, and LeaseLost once the lease is gone. Its coroutines run on the
    engine loop; code of the response in a tool thread (``lent``) uses the ``*_from_thread``
    forms."""

    response: Response
    owner: str
    builder: EventBuilder
    off_loop: OffLoop
    loop: asyncio.AbstractEventLoop
    last_commit: float = field(default_factory=time.monotonic)
    # When the lease was last renewed (run_response passes the time of its claim): a batch
    # renews it again once LEASE_RENEW_S have passed, and the lease runs out LEASE_TTL_S after.
    lease_renewed: float = field(default_factory=time.monotonic)
    _renewing: float | None = None  # the time of the unsaved batch that renews the lease
    lent: bool = False  # the response's code runs in a tool thread: only it may drain the builder
    broke: bool = False  # the last commit of the unsaved batch failed with the database down
    _unsaved: tuple[list[dict[str, Any]], list[tuple[int, dict[str, Any]]]] | None = None
    _cancel: bool = False
    _failure: BaseException | None = None

    async def tick(self) -> None:
        """Between chunks: raise what the commits found; mark the writer due when it has
        events or its lease needs renewing (a lent writer commits them now)."""
        self._raise_failure()
        now = time.monotonic()
        if self.builder.has_pending_events or now - self.lease_renewed >= settings.LEASE_RENEW_S:
            if self.lent:
                if now - self.last_commit >= settings.EVENT_FLUSH_INTERVAL_S:
                    await self.flush()
            elif not self.broke:  # a batch that failed (the database down) is handed again later
                flusher().due(self)
        if self._cancel or cancel_watch().cancel_requested(self.response.pk):
            raise CancelRequested()

    async def flush(self) -> bool:
        """Commit what is pending now; returns the cancel flag (raises LeaseLost, or the
        database's error once the lease is nearly out)."""
        while True:
            await flusher().flush(self)
            self._raise_failure()
            if self._unsaved is None:
                return self._cancel
            await asyncio.sleep(RETRY_INTERVAL_S)  # the database is down

    def flush_from_thread(self) -> bool:
        return asyncio.run_coroutine_threadsafe(self.flush(), self.loop).result()

    async def flush_or_cancel(self) -> None:
        """Commit what is pending now; raise CancelRequested once the cancel flag is seen."""
        if await self.flush():
            raise CancelRequested()

    def flush_or_cancel_from_thread(self) -> None:
        if self.flush_from_thread():
            raise CancelRequested()

    def tick_from_thread(self) -> None:
        asyncio.run_coroutine_threadsafe(self.tick(), self.loop).result()

    # --- the flusher's side ------------------------------------------------------------------

    def take_batch(self) -> Batch:
        """The batch to commit: the one that failed last (the database was down), else the
        builder's pending events (none: a lease renewal)."""
        if self._unsaved is None:
            self._unsaved = self.builder.drain()
        now = time.monotonic()
        if self._renewing is None and now - self.lease_renewed >= settings.LEASE_RENEW_S:
            self._renewing = now  # also for a batch handed again (the database was down) that had not
        events, items = self._unsaved
        return Batch(self.response, self.owner, events, items, renew_lease=self._renewing is not None)

    def settle(self, outcome: Outcome) -> None:
        if isinstance(outcome, bool):
            if self._renewing is not None:
                self.lease_renewed = self._renewing
            self._unsaved, self._renewing, self.broke = None, None, False
            self.last_commit = time.monotonic()
            self._cancel |= outcome
        elif isinstance(outcome, DATABASE_DOWN):
            self.broke = True
            if self._lease_nearly_out():
                self._failure = outcome
            else:
                log.warning("%s: the database is unavailable (%s); trying again", self.response.pk, outcome)
        else:
            self._failure = outcome

    async def landed(self) -> bool:
        """After a broken connection: whether the unsaved batch's commit landed unheard."""
        events = self._unsaved[0] if self._unsaved else []
        return bool(events) and await self.off_loop.database(self._committed, events[-1]["sequence_number"])

    def _lease_nearly_out(self) -> bool:
        """A retry after RETRY_INTERVAL_S would come too close to the end of the lease that
        the last renewal set (after it the reaper may take the response over)."""
        lease_ttl_s: float = settings.LEASE_TTL_S
        return time.monotonic() + RETRY_INTERVAL_S > self.lease_renewed + lease_ttl_s - LEASE_MARGIN_S

    def _raise_failure(self) -> None:
        if self._failure is not None:
            raise self._failure

    # --- the end ---------------------------------------------------------------------------

    async def end(self, status: str, *, error: dict[str, Any] | None, incomplete_details: dict[str, Any] | None,
                  usage: dict[str, Any]) -> None:
        """Write what is pending with the terminal state, and what follows a response's end
        (services/ended.end_response). Raises LeaseLost when another party ended or removed
        the response first."""
        # No batch of this response may be in flight while its end is written.
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
                if self._lease_nearly_out():
                    raise
                log.warning("%s: the database is unavailable (%s); trying again", self.response.pk, database_error)
                await self.off_loop.database(reconnect)
                await asyncio.sleep(RETRY_INTERVAL_S)
        if not ended:
            raise LeaseLost(self.response.pk)

    def _committed(self, sequence_number: int) -> bool:
        committed: bool = Response.objects.filter(pk=self.response.pk,
                                                  last_sequence_number__gte=sequence_number).exists()
        return committed
