"""The Redis doorbell: "response X has events up to N" published after each commit.

It only wakes readers; the database stays the truth. A lost doorbell costs a reader at
most one poll interval, never an event. While Redis is down, writers stop ringing for
RING_COOLDOWN_S after each failure and readers poll the database every POLL_INTERVAL_S,
subscribing again every RESUBSCRIBE_S until Redis is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings

from responses_app.cooldown import Cooldown
from responses_app.redis_client import shared_client

log = logging.getLogger(__name__)
# Without a subscription (Redis unavailable) a listener polls this often.
POLL_INTERVAL_S = 1.0
RESUBSCRIBE_S = 2.0
RING_COOLDOWN_S = 1.0
_ring_cooldown = Cooldown(RING_COOLDOWN_S)


def channel_name(response_id: str) -> str:
    return f"responses:events:{response_id}"


def ring(response_id: str, last_sequence_number: int) -> None:
    """Publish after a commit; failures are logged, since readers also poll the database."""
    if _ring_cooldown.active:
        return
    try:
        shared_client().publish(channel_name(response_id), str(last_sequence_number))
    except redis.RedisError as error:
        _ring_cooldown.failed()
        log.warning("doorbell for %s failed (not ringing for %g s): %s", response_id, RING_COOLDOWN_S, error)
        return
    _ring_cooldown.succeeded()


class Listener:
    """A subscription to one response's doorbell, or none while Redis is unavailable."""

    def __init__(self, response_id: str) -> None:
        self._channel = channel_name(response_id)
        self._client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
        self._pubsub: Any | None = None
        self._subscribed_at = 0.0

    async def subscribe(self) -> None:
        self._subscribed_at = time.monotonic()
        pubsub = self._client.pubsub()
        try:
            await pubsub.subscribe(self._channel)
        except Exception as error:  # the database alone still serves the stream
            log.warning("doorbell unavailable for %s: %s", self._channel, error)
            await _close(pubsub)
            return
        self._pubsub = pubsub

    async def wait(self, timeout: float) -> None:
        """Return when the doorbell rings, or after ``timeout`` seconds at the latest
        (after POLL_INTERVAL_S without a subscription). The caller reads the database
        after each wait, so an event that rang while there was no subscription is found."""
        if self._pubsub is None and time.monotonic() - self._subscribed_at >= RESUBSCRIBE_S:
            await self.subscribe()
        if self._pubsub is None:
            await asyncio.sleep(min(POLL_INTERVAL_S, timeout))
            return
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=remaining)
            except Exception as error:  # the connection broke (Redis restarted): poll until it is back
                log.warning("doorbell lost for %s: %s", self._channel, error)
                await self.close_subscription()
                await asyncio.sleep(min(POLL_INTERVAL_S, remaining))
                return
            if message is not None:
                return

    async def close_subscription(self) -> None:
        pubsub, self._pubsub = self._pubsub, None
        if pubsub is not None:
            await _close(pubsub)

    async def close(self) -> None:
        await self.close_subscription()
        await self._client.aclose()


async def _close(pubsub: Any) -> None:
    try:
        await pubsub.aclose()
    except Exception:  # best effort on a dying connection
        pass


@asynccontextmanager
async def listening(response_id: str) -> AsyncIterator[Listener]:
    """Subscribe for the block. Subscribe before reading the database: an event committed
    between the two is found by the read, and one committed later rings."""
    listener = Listener(response_id)
    try:
        await listener.subscribe()
        yield listener
    finally:
        await listener.close()
