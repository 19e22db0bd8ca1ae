"""A pause after a failure: while Redis (the broker, the doorbell) is down, a process asks
it once per pause instead of once per call, so an outage costs no timeout per event or
per create."""

from __future__ import annotations

import time


class Cooldown:
    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._until = 0.0

    @property
    def active(self) -> bool:
        """True for ``seconds`` after the last failure: skip the call."""
        return time.monotonic() < self._until

    def failed(self) -> None:
        self._until = time.monotonic() + self.seconds

    def succeeded(self) -> None:
        self._until = 0.0
