"""The server's record of what it sent to a socket session: per response, the last
sequence number sent, in Redis for WS_CURSOR_TTL_S. A reconnecting socket that brings no
cursor of its own resumes after it. Best effort: without Redis a socket still works, and
a resume without a cursor starts each response over (duplicates, never a loss)."""

from __future__ import annotations

import logging
from typing import cast

import redis.asyncio as aioredis
from django.conf import settings

log = logging.getLogger(__name__)


class SentCursors:
    def __init__(self, client: aioredis.Redis, tenant_id: int, session: str) -> None:
        self._key = f"responses:ws:sent:{tenant_id}:{session}"
        self._client = client

    async def load(self) -> dict[str, int]:
        try:
            # bytes: the socket's client does not decode responses
            stored = cast(dict[bytes, bytes], await self._client.hgetall(self._key))
        except Exception as error:  # noqa: BLE001  (best effort, as the docstring says)
            log.warning("no sent cursors for %s: %s", self._key, error)
            return {}
        return {key.decode(): int(value) for key, value in stored.items()}

    async def sent(self, response_id: str, sequence_number: int) -> None:
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.hset(self._key, response_id, sequence_number)  # queued: a pipeline's commands return it
                pipe.expire(self._key, settings.WS_CURSOR_TTL_S)
                await pipe.execute()
        except Exception as error:  # noqa: BLE001
            log.warning("could not record the sent cursor of %s: %s", response_id, error)
