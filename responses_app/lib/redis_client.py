"""The process's one synchronous Redis client (REDIS_URL) for short commands: the stream
doorbell and the rate limiter. Its connection pool is thread-safe; the timeouts keep a
Redis outage from stalling a request or a worker's batch."""

from __future__ import annotations

import threading

import redis
from django.conf import settings

_client: redis.Redis | None = None
_client_lock = threading.Lock()


def shared_client() -> redis.Redis:
    global _client
    with _client_lock:
        if _client is None:
            _client = redis.Redis.from_url(settings.REDIS_URL, socket_timeout=2, socket_connect_timeout=2)
        return _client
