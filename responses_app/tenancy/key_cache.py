"""API keys this process has resolved, with their tenants, so that authenticating a request
costs one Redis GET instead of a database query through the ORM.

A change to any key or tenant (a revocation, the admin's edits, a new limit) moves an epoch
in Redis once it commits (``keys_changed``). Every lookup reads the epoch first and empties
this process's cache when it moved, so a revocation holds on every process from its next
request on, as without the cache. Entries also age out after API_KEY_CACHE_S. Without Redis
nothing is served from the cache: every request reads the database.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import cast

import redis
from django.conf import settings
from django.db import transaction
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from responses_app.lib.redis_client import shared_client
from responses_app.models import ApiKey, Tenant

log = logging.getLogger(__name__)
EPOCH_KEY = "api-keys:epoch"


class KeyCache:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[float, ApiKey]] = {}
        self._epoch: bytes | None = None

    def get(self, prefix: str) -> ApiKey | None:
        if settings.API_KEY_CACHE_S <= 0 or not self._epoch_unchanged():
            return None
        entry = self._keys.get(prefix)
        if entry is None or time.monotonic() - entry[0] > settings.API_KEY_CACHE_S:
            return None
        return entry[1]

    def put(self, prefix: str, key: ApiKey) -> None:
        if settings.API_KEY_CACHE_S > 0:
            with self._lock:
                self._keys[prefix] = (time.monotonic(), key)

    def clear(self) -> None:
        with self._lock:
            self._keys.clear()

    def _epoch_unchanged(self) -> bool:
        """Whether the cache may serve: Redis answered, and the cache is emptied if the epoch moved."""
        try:
            epoch = cast(bytes | None, shared_client().get(EPOCH_KEY))  # the shared client does not decode
        except redis.RedisError:
            self.clear()
            return False
        with self._lock:
            if epoch != self._epoch:
                self._keys.clear()
                self._epoch = epoch
        return True


cache = KeyCache()


def keys_changed() -> None:
    """A key or tenant changed: this process's cache is emptied now, and every process's
    once the caller's transaction commits (not before, or one could cache the old row again)."""
    cache.clear()

    def bump() -> None:
        cache.clear()
        try:
            shared_client().incr(EPOCH_KEY)
        except redis.RedisError as error:
            # The other processes serve nothing from their caches while they cannot read the epoch.
            log.warning("could not announce an API key change: %s", error)

    transaction.on_commit(bump)


@receiver(post_save, sender=ApiKey)
@receiver(post_save, sender=Tenant)
@receiver(post_delete, sender=ApiKey)
@receiver(post_delete, sender=Tenant)
def _row_changed(created: bool = False, **_: object) -> None:
    # A new key or tenant is in no process's cache: there is nothing to announce (and the
    # first `make run` makes the demo key before its Redis is up).
    if not created:
        keys_changed()
