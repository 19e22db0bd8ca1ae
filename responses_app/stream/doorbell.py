"""The Redis doorbell: "response X has events up to N" published after each commit.

It only wakes readers; the database stays the truth. A lost doorbell costs a reader at
most one poll interval, never an event.
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

from responses_app.redis_client import shared_client

log = logging.getLogger(__name__)
# Without a subscription (Redis unavailable) a listener polls this often.
POLL_INTERVAL_S = 1.0


def channel_name(response_id: str) -> str:
    return f"responses:events:{response_id}"


def ring(response_id: str, last_sequence_number: int) -> None:
    """Publish after a commit; failures are logged, since readers also poll the database."""
    try:
        shared_client().publish(channel_name(response_id), str(last_sequence_number))
    except redis.RedisError as error:
        log.warning("doorbell for %s failed: %s", response_id, error)


class Listener:
    """A subscription to one response's doorbell (or none, when Redis is unavailable)."""

    def __init__(self, pubsub: Any | None) -> None:
        self._pubsub = pubsub

    async def wait(self, timeout: float) -> None:
        """Return when the doorbell rings, or after ``timeout`` seconds at the latest
        (after POLL_INTERVAL_S without a subscription)."""
        if self._pubsub is None:
            await asyncio.sleep(min(POLL_INTERVAL_S, timeout))
            return
        deadline = time.monotonic() + timeout
        while (remaining := deadline - time.monotonic()) > 0:
            try:
                message = await self._pubsub.get_message(ignore_subscribe_messages=True, timeout=remaining)
            except Exception:  # the connection broke: the caller reads the database anyway
                await asyncio.sleep(remaining)
                return
            if message is not None:
                return


@asynccontextmanager
async def listening(response_id: str) -> AsyncIterator[Listener]:
    """Subscribe for the block. Subscribe before reading the database: an event committed
    between the two is found by the read, and one committed later rings."""
    client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
    pubsub: Any | None = client.pubsub()
    try:
        try:
            await pubsub.subscribe(channel_name(response_id))
        except Exception as error:  # the database alone still serves the stream
            log.warning("doorbell unavailable for %s: %s", response_id, error)
            pubsub = None
        yield Listener(pubsub)
    finally:
        if pubsub is not None:
            try:
                await pubsub.aclose()
            except Exception:  # best effort on a dying connection
                pass
        await client.aclose()
