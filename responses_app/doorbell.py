"""The Redis doorbell: "response X has events up to N" published after each commit.

It only wakes readers; the database stays the truth. A lost doorbell costs a reader at
most one poll interval, never an event.
"""

from __future__ import annotations

import logging

import redis
import redis.asyncio as aioredis
from django.conf import settings

from .redis_client import shared_client

log = logging.getLogger(__name__)


def channel_name(response_id: str) -> str:
    return f"responses:events:{response_id}"


def ring(response_id: str, last_sequence_number: int) -> None:
    """Publish after a commit; failures are logged, since readers also poll the database."""
    try:
        shared_client().publish(channel_name(response_id), str(last_sequence_number))
    except redis.RedisError as error:
        log.warning("doorbell for %s failed: %s", response_id, error)


def async_client() -> aioredis.Redis:
    return aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
