"""The Redis doorbell: "response X has events up to N" published after each commit, with
the SSE frames of the events that commit wrote (``Pushed``).

A live reader whose cursor the frames continue sends them as they came, without reading
the database (stream/reader.py); any other reader, or a reader that missed a ring, reads
the database, which stays the truth: the frames are the bytes a read of the committed
rows gives. A lost doorbell costs a reader at most one poll interval, never an event.
While Redis is down, writers stop ringing for RING_COOLDOWN_S after each failure and
readers poll the database every POLL_INTERVAL_S, subscribing again every RESUBSCRIBE_S
until Redis is back.
"""

from __future__ import annotations

import asyncio
import logging
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio as aioredis
from django.conf import settings
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from responses_app.lib.cooldown import Cooldown
from responses_app.lib.redis_client import shared_client

log = logging.getLogger(__name__)
# Without a subscription (Redis unavailable) a listener polls this often.
POLL_INTERVAL_S = 1.0
RESUBSCRIBE_S = 2.0
RING_COOLDOWN_S = 1.0
CONFIRMATION_TIMEOUT_S = 2.0
_ring_cooldown = Cooldown(RING_COOLDOWN_S)


def channel_name(response_id: str) -> str:
    return f"responses:events:{response_id}"


# Frames pushed to a listener and not yet taken are dropped beyond this (a reader that
# falls behind reads the database instead); a commit's frames beyond it are not published.
MAX_PUSHED_BYTES = 1 << 20


@dataclass(frozen=True)
class Pushed:
    """The SSE frames of one commit's events, first..last; ``ends``: the last is terminal."""

    first: int
    last: int
    ends: bool
    data: bytes

    def message(self) -> bytes:
        return b"%d %d %d\n" % (self.last, self.first, self.ends) + self.data

    @classmethod
    def parse(cls, message: bytes) -> Pushed | None:
        """The frames of a ring's message, or None for a ring without frames ("<last>")."""
        head, newline, data = message.partition(b"\n")
        if not newline:
            return None
        last, first, ends = head.split()
        return cls(int(first), int(last), ends == b"1", data)


def ring(response_id: str, last_sequence_number: int, pushed: Pushed | None = None) -> None:
    """Publish after a commit, with the frames it wrote if any; failures are logged, since
    readers also poll the database."""
    if _ring_cooldown.active:
        return
    try:
        shared_client().publish(channel_name(response_id), _message(last_sequence_number, pushed))
    except redis.RedisError as error:
        _ring_failed(response_id, error)
        return
    _ring_cooldown.succeeded()


def ring_many(rings: list[tuple[str, Pushed]]) -> None:
    """ring() for several responses' commits, in one round trip (a pipeline)."""
    if _ring_cooldown.active or not rings:
        return
    pipeline = shared_client().pipeline(transaction=False)
    for response_id, pushed in rings:
        pipeline.publish(channel_name(response_id), _message(pushed.last, pushed))
    try:
        pipeline.execute()
    except redis.RedisError as error:
        _ring_failed(rings[0][0], error)
        return
    _ring_cooldown.succeeded()


def _message(last_sequence_number: int, pushed: Pushed | None) -> bytes:
    """A ring's message: the commit's frames, or only its last sequence number when it has
    none or they are over MAX_PUSHED_BYTES."""
    if pushed is not None and len(pushed.data) <= MAX_PUSHED_BYTES:
        return pushed.message()
    return str(last_sequence_number).encode()


def _ring_failed(response_id: str, error: redis.RedisError) -> None:
    _ring_cooldown.failed()
    log.warning("doorbell for %s failed (not ringing for %g s): %s", response_id, RING_COOLDOWN_S, error)


class Listener:
    """One reader's subscription to one response's doorbell, through its process's hub."""

    def __init__(self, response_id: str) -> None:
        self.channel = channel_name(response_id)
        self._rang = asyncio.Event()
        self._hub = _hub()
        self._pushed: deque[Pushed] = deque()
        self._pushed_bytes = 0

    def ring(self, pushed: Pushed | None = None) -> None:
        if pushed is not None:
            self._pushed.append(pushed)
            self._pushed_bytes += len(pushed.data)
            if self._pushed_bytes > MAX_PUSHED_BYTES:
                self._pushed.clear()
                self._pushed_bytes = 0
        self._rang.set()

    def take_after(self, cursor: int) -> Pushed | None:
        """The pushed frames that continue ``cursor`` (several commits' together), or None
        when none do (nothing pushed, or a gap: the reader reads the database)."""
        while self._pushed and self._pushed[0].last <= cursor:
            self._pushed_bytes -= len(self._pushed.popleft().data)
        taken: list[Pushed] = []
        while self._pushed and self._pushed[0].first == cursor + 1:
            taken.append(self._pushed.popleft())
            self._pushed_bytes -= len(taken[-1].data)
            cursor = taken[-1].last
        if not taken:
            return None
        return Pushed(taken[0].first, cursor, taken[-1].ends, b"".join(one.data for one in taken))

    async def wait(self, timeout: float) -> None:
        """Return when the doorbell rings, or after ``timeout`` seconds at the latest
        (after POLL_INTERVAL_S without a subscription). The caller reads the database
        after each wait, so an event that rang while there was no subscription is found;
        a ring that came while the caller was reading makes the next wait return at once."""
        if not self._hub.subscribed(self.channel):
            await self._hub.reconnect_if_due()
        if not self._hub.subscribed(self.channel):
            await asyncio.sleep(min(POLL_INTERVAL_S, timeout))
            return
        try:
            async with asyncio.timeout(timeout):
                await self._rang.wait()
        except TimeoutError:
            return
        self._rang.clear()


class _Hub:
    """The one subscription connection of an event loop: every channel that one of its
    listeners follows, subscribed once however many listeners follow it (a thousand
    readers of one response are one subscription; a burst of streams opens no
    connection of its own). It closes when its last listener leaves.

    A listener counts as subscribed once Redis confirmed its channel's SUBSCRIBE, so the
    database read that follows misses no ring. While Redis is unavailable there is no
    subscription at all; listeners poll and try again every RESUBSCRIBE_S, which
    subscribes every channel anew."""

    def __init__(self) -> None:
        self._listeners: dict[str, set[Listener]] = {}
        self._pubsub: Any | None = None
        self._client: Any | None = None
        self._reader: asyncio.Task | None = None
        self._connecting: asyncio.Task | None = None
        self._attempted_at = -RESUBSCRIBE_S
        # Channels whose SUBSCRIBE was sent on the current connection, and per channel the
        # confirmations still awaited, in the order of the commands (Redis answers in order).
        self._channels: set[str] = set()
        self._confirmations: dict[str, deque[asyncio.Future[bool]]] = {}

    def subscribed(self, channel: str) -> bool:
        return self._pubsub is not None and channel in self._channels

    async def join(self, listener: Listener) -> None:
        self._listeners.setdefault(listener.channel, set()).add(listener)
        if self._pubsub is None:
            await self.reconnect_if_due()
        if self._pubsub is not None:
            await self._subscribe([listener.channel])

    async def leave(self, listener: Listener) -> None:
        followers = self._listeners.get(listener.channel, set())
        followers.discard(listener)
        if followers:
            return
        self._listeners.pop(listener.channel, None)
        if not self._listeners:
            loop = asyncio.get_running_loop()
            if _hubs.get(loop) is self:  # a hub closed and reopened meanwhile is another's now
                del _hubs[loop]
            await self._close()
            return
        if self._pubsub is not None and listener.channel in self._channels:
            self._channels.discard(listener.channel)
            try:
                await self._pubsub.unsubscribe(listener.channel)
            except Exception as error:  # the reader notices the broken connection
                log.debug("doorbell: unsubscribe %s failed: %s", listener.channel, error)

    async def reconnect_if_due(self) -> None:
        """Connect (once for all who ask at the same moment) unless tried less than
        RESUBSCRIBE_S ago, and subscribe every channel followed."""
        if self._connecting is None:
            if self._pubsub is not None or time.monotonic() - self._attempted_at < RESUBSCRIBE_S:
                return
            self._attempted_at = time.monotonic()
            self._connecting = asyncio.ensure_future(self._connect())
            self._connecting.add_done_callback(self._connected)
        await asyncio.shield(self._connecting)

    async def _connect(self) -> None:
        client = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0))
        pubsub = client.pubsub()
        try:
            await pubsub.connect()
        except asyncio.CancelledError:  # the hub closed meanwhile
            await _close(pubsub, client)
            raise
        except Exception as error:  # the database alone still serves the streams
            log.warning("doorbell unavailable: %s", error)
            await _close(pubsub, client)
            return
        # redis-py reconnects a broken connection once, even with no retries, and would
        # subscribe its channels again behind the hub's back: a lost connection is the
        # hub's to replace (_lost), and its listeners read the database meanwhile.
        assert pubsub.connection is not None  # connect() made it
        pubsub.connection.deregister_connect_callback(pubsub.on_connect)
        self._client, self._pubsub, self._channels = client, pubsub, set()
        self._reader = _background(self._read(pubsub))
        await self._subscribe(list(self._listeners))

    def _connected(self, done: asyncio.Task) -> None:
        self._connecting = None
        if not done.cancelled():
            done.exception()  # _connect logs its own failures

    async def _subscribe(self, channels: list[str]) -> None:
        """SUBSCRIBE the channels not subscribed yet and wait for Redis to confirm each
        (also those another listener is subscribing right now)."""
        pubsub = self._pubsub
        if pubsub is None:
            return
        new = [channel for channel in channels if channel not in self._channels]
        waiting = [self._expect_confirmation(channel) for channel in new]
        waiting += [self._confirmations[channel][-1] for channel in channels
                    if channel not in new and self._confirmations.get(channel)]
        if new:
            self._channels.update(new)
            try:
                await pubsub.subscribe(*new)
            except Exception as error:
                self._lost(pubsub, error)
                return
        if waiting:
            try:
                async with asyncio.timeout(CONFIRMATION_TIMEOUT_S):
                    await asyncio.gather(*(asyncio.shield(future) for future in waiting))
            except TimeoutError:
                log.warning("doorbell: Redis did not confirm a subscription within %g s", CONFIRMATION_TIMEOUT_S)

    def _expect_confirmation(self, channel: str) -> asyncio.Future[bool]:
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._confirmations.setdefault(channel, deque()).append(future)
        return future

    async def _read(self, pubsub: Any) -> None:
        try:
            while True:
                message = await pubsub.get_message(timeout=None)
                if message is None:
                    continue
                channel = message["channel"].decode()
                if message["type"] == "message":
                    pushed = Pushed.parse(message["data"])
                    for listener in self._listeners.get(channel, ()):
                        listener.ring(pushed)
                elif message["type"] == "subscribe" and (pending := self._confirmations.get(channel)):
                    _resolve(pending.popleft(), True)
                    if not pending:
                        del self._confirmations[channel]
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the connection broke (Redis restarted): poll until it is back
            self._lost(pubsub, error)

    def _lost(self, pubsub: Any, error: Exception) -> None:
        if self._pubsub is not pubsub:
            return
        log.warning("doorbell lost: %s", error)
        self._stop_reader()
        client, self._client, self._pubsub, self._channels = self._client, None, None, set()
        self._attempted_at = time.monotonic()
        for pending in self._confirmations.values():
            for future in pending:
                _resolve(future, False)
        self._confirmations.clear()
        for followers in self._listeners.values():
            for listener in followers:
                listener.ring()  # each reads the database now, then polls
        _background(_close(pubsub, client))

    def _stop_reader(self) -> None:
        """Cancel the reader of the connection about to be closed: closing it would leave
        the reader waiting for a socket that nothing refers to any more."""
        reader, self._reader = self._reader, None
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()

    async def _close(self) -> None:
        if self._connecting is not None:
            self._connecting.cancel()
        self._stop_reader()
        pubsub, client, self._pubsub, self._client = self._pubsub, self._client, None, None
        if pubsub is not None:
            await _close(pubsub, client)


# The hubs' own tasks (readers, closes), held until they end: the event loop refers to its
# tasks weakly, and one that waits on a closed connection's socket would be collected
# mid-wait ("Task was destroyed but it is pending!").
_tasks: set[asyncio.Task] = set()


def _background(coroutine: Any) -> asyncio.Task:
    task = asyncio.ensure_future(coroutine)
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)
    return task


def _resolve(future: asyncio.Future[bool], value: bool) -> None:
    if not future.done():
        future.set_result(value)


async def _close(pubsub: Any, client: Any) -> None:
    try:
        await pubsub.aclose()
        await client.aclose()
    except Exception:  # best effort on a dying connection
        pass


_hubs: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Hub] = weakref.WeakKeyDictionary()


def _hub() -> _Hub:
    loop = asyncio.get_running_loop()
    hub = _hubs.get(loop)
    if hub is None:
        hub = _hubs[loop] = _Hub()
    return hub


@asynccontextmanager
async def listening(response_id: str) -> AsyncIterator[Listener]:
    """Subscribe for the block. Subscribe before reading the database: an event committed
    between the two is found by the read, and one committed later rings."""
    listener = Listener(response_id)
    hub = listener._hub
    try:
        await hub.join(listener)
        yield listener
    finally:
        await hub.leave(listener)
