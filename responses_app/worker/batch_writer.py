"""A worker's writes for one response: its events in batches, its lease, its end.

The builder's events are committed at most EVENT_FLUSH_INTERVAL_S after they appear; the
lease is renewed at least every LEASE_RENEW_S; the cancel flag is read from the process's
cancel watch in between, so a cancel is noticed within a second.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from responses_app.models import Response
from responses_app.stream.builder import EventBuilder
from responses_app.stream.store import LeaseLost, end_response, save_batch
from responses_app.worker.cancel_watch import cancel_watch


class CancelRequested(Exception):
    pass


@dataclass
class BatchWriter:
    """Commits the builder's events and renews the lease; raises CancelRequested once the
    cancel flag is seen, and LeaseLost once the lease is gone."""

    response: Response
    owner: str
    builder: EventBuilder
    last_flush: float = field(default_factory=time.monotonic)

    def tick(self) -> None:
        now = time.monotonic()
        if self.builder.has_pending_events and now - self.last_flush >= settings.EVENT_FLUSH_INTERVAL_S:
            cancel = self.flush()
        elif now - self.last_flush >= settings.LEASE_RENEW_S:
            cancel = self.flush()
        else:
            cancel = cancel_watch().cancel_requested(self.response.pk)
        if cancel:
            raise CancelRequested()

    def flush(self) -> bool:
        """Commit now; returns the cancel flag."""
        cancel = save_batch(self.response, self.owner, self.builder)
        self.last_flush = time.monotonic()
        return cancel

    def end(self, status: str, *, error: dict[str, Any] | None, incomplete_details: dict[str, Any] | None,
            usage: dict[str, Any]) -> None:
        """Write what is pending with the terminal state. Raises LeaseLost when another
        party ended or removed the response first."""
        if not end_response(self.response.pk, status, error=error, incomplete_details=incomplete_details,
                            usage=usage, builder=self.builder, lease_owner=self.owner):
            raise LeaseLost(self.response.pk)
