"""One lane of a Responses WebSocket: its responses delivered one after another, each
replayed from the database and then followed live by the same reader as SSE
(stream/reader.follow_frames), then the steering outcomes of each, then the next
response on the lane (a steered successor, or what the client queued behind it)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import cast

from responses_app import selectors
from responses_app.api.websocket.messages import steer_failed, steer_pending, stream_messages
from responses_app.lib.asyncdb import db
from responses_app.lib.tasks import cancel_and_wait
from responses_app.models import EventNames, SteerState
from responses_app.sessions import lanes, steering
from responses_app.stream.event_log import Frames
from responses_app.stream.event_names import named
from responses_app.stream.reader import follow_frames

log = logging.getLogger(__name__)

Send = Callable[[list[str]], Awaitable[None]]


class Lane:
    def __init__(self, stream_id: str, send: Send, cursors: dict[str, int],
                 sent: Callable[[str, int], Awaitable[None]],
                 event_names: str = cast(str, EventNames.OPENAI)) -> None:  # a str: see tenancy/api_keys.py
        self.stream_id = stream_id
        self._event_names = event_names
        self._send = send
        self._cursors = cursors  # response id -> last sequence number the client saw or was sent
        self._sent = sent
        self._queue: asyncio.Queue[tuple[str, Frames | None]] = asyncio.Queue()
        self._delivered: set[str] = set()
        self._task = asyncio.ensure_future(self._run())

    def follow(self, response_id: str, created: Frames | None = None) -> None:
        """Deliver this response after the ones before it; ``created``: its response.created,
        known to be committed (a create on this socket), sent without reading it back."""
        self._queue.put_nowait((response_id, created))

    async def stop(self) -> None:
        await cancel_and_wait(self._task)

    async def _run(self) -> None:
        while True:
            response_id, created = await self._queue.get()
            following: str | None = response_id
            while following is not None:
                if following not in self._delivered:
                    self._delivered.add(following)
                    try:
                        await self._deliver(following, created if following == response_id else None)
                    except Exception:  # one response's failure must not stop the lane (a cancel still does)
                        log.exception("delivering %s on a WebSocket lane failed", following)
                following = await db(lanes.next_on_lane)(following)

    async def _deliver(self, response_id: str, created: Frames | None) -> None:
        cursor = self._cursors.get(response_id, -1)
        if created is not None and cursor >= created.last_sequence_number:
            created = None
        ended = False
        async for frames in named(follow_frames(response_id, cursor, committed=created), self._event_names):
            if frames is None:  # a keep-alive: Daphne pings the socket itself
                continue
            messages = stream_messages(frames, self.stream_id)
            await self._send(messages.texts)
            self._cursors[response_id] = messages.last_sequence_number
            await self._sent(response_id, messages.last_sequence_number)
            ended = ended or messages.ends
        if ended:
            await self._send_outcomes(response_id)

    async def _send_outcomes(self, response_id: str) -> None:
        """After the terminal event: what became of the steering input the response did
        not commit to a successor (the successor's response.created speaks for the rest)."""
        response = await db(selectors.response_by_id)(response_id)
        if response is None:
            return
        outcomes = await db(steering.outcomes)(response)
        last = response.last_sequence_number
        await self._send([
            steer_pending(o.steer, o.required_input, last, self.stream_id) if o.steer.state == SteerState.PENDING else
            steer_failed(o.steer.error_code, o.steer.error_message, previous_response_id=response_id,
                         steer_input=o.steer.input, sequence_number=last, stream_id=self.stream_id,
                         steer_id=o.steer.pk)
            for o in outcomes])
