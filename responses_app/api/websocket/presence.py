"""Which sockets follow a socket session now, in Redis: each live socket of the session
holds an entry that it renews while it is open and removes when it closes, and that
lapses WS_RESUME_GRACE_S after a crashed process stopped renewing it.

A session may have more than one socket at once (a client reconnecting before the server
noticed that its old socket died, or two clients naming the same session): the session's
responses are detached, and after the grace cancelled if foreground, only when its last
socket goes. Best effort, as the sent cursors: without Redis, a closing socket counts as
the last one.
"""

from __future__ import annotations

import asyncio
import logging
import time

import redis.asyncio as aioredis
from django.conf import settings

from responses_app.lib.tasks import cancel_and_wait
from responses_app.sessions.sockets import presence_key

log = logging.getLogger(__name__)


class SessionPresence:
    def __init__(self, client: aioredis.Redis, tenant_id: int, session: str, socket_id: str) -> None:
        self._client = client
        self._key = presence_key(tenant_id, session)
        self._socket_id = socket_id
        self._renewal: asyncio.Task | None = None

    async def join(self) -> None:
        await self._renew()
        self._renewal = asyncio.create_task(self._keep_renewing())

    async def stop(self) -> None:
        """Stop renewing (the entry lapses after the grace period, as a lost socket's does)."""
        await cancel_and_wait(self._renewal)

    async def leave(self) -> bool:
        """Remove this socket; whether another socket of the session is still live."""
        await self.stop()
        try:
            async with self._client.pipeline(transaction=True) as pipe:
                pipe.zrem(self._key, self._socket_id)  # queued: a pipeline's commands return it
                pipe.zcount(self._key, time.time(), "+inf")
                _, others = await pipe.execute()
        except Exception as error:  # noqa: BLE001  (best effort, as the docstring says)
            log.warning("socket presence of %s unknown: %s", self._key, error)
            return False
        return others > 0

    async def _keep_renewing(self) -> None:
        while True:
            await asyncio.sleep(settings.WS_RESUME_GRACE_S / 3)
            await self._renew()

    async def _renew(self) -> None:
        grace = settings.WS_RESUME_GRACE_S
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.zadd(self._key, {self._socket_id: time.time() + grace})  # queued, as in leave
                pipe.zremrangebyscore(self._key, "-inf", time.time())
                pipe.expire(self._key, int(grace) + 1)
                await pipe.execute()
        except Exception as error:  # noqa: BLE001
            log.warning("could not renew the socket presence of %s: %s", self._key, error)
