"""The Responses WebSocket (``client.responses.connect()``) at ``/v1/responses``.

Authenticated once at the handshake with the same API keys as HTTP (and again for each
create, so that a revoked key stops working at once). A bad key gets an ``error`` event
with status 401 and then the close code 3000 ("Unauthorized" in the IANA registry; a bad
query gets its 400 and 4400), which the SDK does not retry: Daphne can refuse a handshake
only with a 403, so the socket is accepted and the error answers the client's first
message (or WS_REFUSAL_WAIT_S of silence). The SDK sends its first event right after the
handshake; a socket already closed would fail that send with a bare close code, and the
error event would never be read. Client events:
``response.create`` (the body of ``POST /v1/responses``, always streamed, plus the lane
``stream_id``) and ``response.steer``. Each response is an ordinary persisted response;
this socket only follows it (lane.py). Query parameters: ``session`` names the socket
session so that a reconnecting socket resumes it; ``starting_after=<response id>:<n>``
(repeatable) says what the client saw, for an exact resume.
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from dataclasses import replace
from typing import Any
from urllib.parse import parse_qs

import redis.asyncio as aioredis
from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings

from responses_app.api.websocket.cursors import SentCursors
from responses_app.api.websocket.lane import Lane
from responses_app.api.websocket.messages import error_event, steer_accepted, steer_failed
from responses_app.api.websocket.presence import SessionPresence
from responses_app.files.inputs import read_input_files
from responses_app.lib.asyncdb import db
from responses_app.models import Response, ResponseSteer
from responses_app.services.create import create_response
from responses_app.services.ended import create_without_generating
from responses_app.sessions import sockets, steering
from responses_app.stream.event_log import Frames
from responses_app.stream.sse import sse_frame
from responses_app.tenancy import quotas
from responses_app.tenancy.api_keys import Caller, authenticate_bearer
from responses_app.validation.create import parse_create_request
from responses_app.validation.steer import SteerRequest, parse_steer
from responses_app.wire import json_input
from responses_app.wire.errors import APIError, InvalidRequest, PermissionDenied, ServerError, invalid_type
from responses_app.wire.request_body import MAX_INTEGER

log = logging.getLogger(__name__)
# Close codes the SDK's reconnect does not retry (Autobahn, under Daphne, lets a server
# send only 1000 and 3000-4999).
UNAUTHORIZED_CLOSE = 3000
BAD_REQUEST_CLOSE = 4400
SESSION_PATTERN = re.compile(r"^[A-Za-z0-9_.:-]{1,128}$")
STREAM_ID_MAX = 64


class ResponsesSocket(AsyncWebsocketConsumer):
    caller: Caller
    authorization: str | None
    session: str
    socket_id: str

    refusal: APIError | None = None
    refusal_timer: asyncio.Task | None = None

    async def connect(self) -> None:
        await self.accept()
        headers = dict(self.scope["headers"])
        self.authorization = headers.get(b"authorization", b"").decode("latin-1") or None
        try:
            self.caller = await db(authenticate_bearer)(self.authorization)
            session, seen = _query(self.scope["query_string"].decode("latin-1"))
        except APIError as error:
            self.refusal = error
            self.refusal_timer = asyncio.create_task(self._refuse(after_s=settings.WS_REFUSAL_WAIT_S))
            return
        self.socket_id = uuid.uuid4().hex
        self.session = session or self.socket_id
        self.lanes: dict[str, Lane] = {}
        self.redis = aioredis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=2)
        self.sent_cursors = SentCursors(self.redis, self.caller.tenant.pk, self.session)
        self.presence = SessionPresence(self.redis, self.caller.tenant.pk, self.session, self.socket_id)
        await self.presence.join()
        self.cursors: dict[str, int] = {}
        # The last store=false response created here: this socket alone may continue it.
        self.held_response = ""
        if session:
            self.cursors = {**await self.sent_cursors.load(), **seen}
            starts = await db(sockets.resume)(self.caller.tenant, self.session, self.socket_id, self.cursors)
            for start in starts:
                self._lane(start.stream_id).follow(start.response_id)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            # Daphne's shutdown cancels the socket without a disconnect and waits for it,
            # not for the tasks it started: they end here, or are collected pending.
            await self._stop_tasks()

    async def _refuse(self, after_s: float = 0.0) -> None:
        """Send the handshake's error, then close with its code (once)."""
        await asyncio.sleep(after_s)
        error, self.refusal = self.refusal, None
        if error is not None:
            await self.send(text_data=error_event(error))
            await self.close(code=UNAUTHORIZED_CLOSE if error.status_code == 401 else BAD_REQUEST_CLOSE)

    async def _stop_tasks(self) -> None:
        if self.refusal_timer is not None:
            self.refusal_timer.cancel()
        if hasattr(self, "lanes"):
            await asyncio.gather(*(lane.stop() for lane in self.lanes.values()), self.presence.stop())

    async def disconnect(self, code: int) -> None:
        if not hasattr(self, "lanes"):
            await self._stop_tasks()  # refused at the handshake
            return
        # Detached before the lanes stop: the session's responses start their grace whatever
        # a lane is in the middle of (Daphne kills a socket that takes over 10 s to close).
        if not await self.presence.leave():
            await db(sockets.detach)(self.caller.tenant, self.session)
        await self._stop_tasks()
        await self.redis.aclose()

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        if not hasattr(self, "lanes"):
            # Refused at the handshake: the first message is answered with the error (unless
            # the timer is sending it: it has taken it).
            if self.refusal is not None and self.refusal_timer is not None:
                self.refusal_timer.cancel()
                await self._refuse()
            return
        try:
            event = json_input.loads(text_data if text_data is not None else bytes_data or b"",
                                     max_depth=settings.JSON_BODY_MAX_DEPTH)
        except InvalidRequest as error:
            if error.code == "invalid_json":
                event = None
            else:
                await self.send(text_data=error_event(error))
                return
        if not isinstance(event, dict):
            await self.send(text_data=error_event(InvalidRequest(
                "Each message must be a JSON object: a response.create or response.steer event.",
                code="invalid_json")))
            return
        kind = event.get("type")
        if kind == "response.create":
            await self._create(event)
        elif kind == "response.steer":
            await self._steer(event)
        else:
            await self.send(text_data=error_event(InvalidRequest(
                f"Invalid value for 'type': {kind!r}; expected 'response.create' or 'response.steer'.",
                param="type", code="invalid_value")))

    async def _send_all(self, texts: list[str]) -> None:
        for text in texts:
            await self.send(text_data=text)

    def _lane(self, stream_id: str) -> Lane:
        lane = self.lanes.get(stream_id)
        if lane is None:
            lane = self.lanes[stream_id] = Lane(stream_id, self._send_all, self.cursors, self.sent_cursors.sent,
                                                event_names=self.caller.api_key.event_names)
        return lane

    async def _create(self, event: dict[str, Any]) -> None:
        body = {name: value for name, value in event.items() if name not in ("type", "stream_id")}
        stream_id = event.get("stream_id")
        try:
            stream_id = _stream_id(stream_id)
            if body.pop("stream", True) is not True:
                raise InvalidRequest("Responses over the WebSocket are always streamed; leave 'stream' out.",
                                     param="stream")
            response = await db(self._create_response)(body, stream_id)
        except APIError as error:
            if body.get("previous_response_id") == self.held_response:
                self.held_response = ""  # a failed continuation lets go of what it continued
            await self.send(text_data=error_event(error, stream_id if isinstance(stream_id, str) else None))
            return
        except Exception:
            log.exception("response.create over the WebSocket failed")
            await self.send(text_data=error_event(ServerError()))
            return
        if not response.store:
            self.held_response = response.pk
        created = Frames(sse_frame(response.created_event), last_sequence_number=0, ends=False)
        self._lane(stream_id).follow(response.pk, created)

    def _writer(self, action: str) -> Caller:
        """The socket's key as it stands now (a revoked key stops at once), when it may write."""
        caller = authenticate_bearer(self.authorization)
        if not caller.can_write:
            raise PermissionDenied(f"This API key is read-only: it may not {action}.",
                                   code="insufficient_permissions")
        return caller

    def _create_response(self, body: dict[str, Any], stream_id: str) -> Response:
        """In a database thread: what ``POST /v1/responses`` does, for this socket's lane."""
        caller = self._writer("create responses")
        generate = body.pop("generate", True)
        if not isinstance(generate, bool):
            raise invalid_type("generate", "a boolean", generate)
        request = parse_create_request({**body, "stream": True})
        quotas.check_requests_per_minute(caller.tenant)
        request = replace(request, socket_session=self.session, stream_id=stream_id, socket_id=self.socket_id,
                          socket_held_response=self.held_response, generate=generate,
                          joins_lane=generate)  # nothing runs: it neither waits for the lane nor holds it
        return (create_response if generate else create_without_generating)(caller.tenant, request)

    async def _steer(self, event: dict[str, Any]) -> None:
        target = event.get("previous_response_id")
        target = target if isinstance(target, str) else ""
        try:
            request = parse_steer(event)
        except InvalidRequest as error:
            await self.send(text_data=steer_failed("invalid_input", error.message, previous_response_id=target,
                                                   steer_input=event.get("input"), sequence_number=0,
                                                   stream_id=None))
            return
        try:
            steer = await db(self._accept_steer)(request)
        except APIError as error:
            await self.send(text_data=error_event(error))
            return
        except steering.SteerRefused as refused:
            known = refused.response
            await self.send(text_data=steer_failed(
                refused.code, refused.message, previous_response_id=target, steer_input=request.input,
                sequence_number=known.last_sequence_number if known else 0,
                stream_id=known.stream_id if known else None))
            return
        await self.send(text_data=steer_accepted(steer, steer.response.last_sequence_number,
                                                 steer.response.stream_id))

    def _accept_steer(self, request: SteerRequest) -> ResponseSteer:
        """In a database thread: steering ends a response and makes its successor, so it
        needs a key that may write, checked as it stands now."""
        caller = self._writer("steer responses")
        return steering.accept_steer(caller.tenant, self.session, request.previous_response_id, request.input,
                                     read_input_files(caller.tenant, request.input_items))


def _query(query_string: str) -> tuple[str, dict[str, int]]:
    """``session`` and the ``starting_after`` cursors of the socket URL."""
    query = parse_qs(query_string)
    session = (query.get("session") or [""])[-1]
    if session and not SESSION_PATTERN.match(session):
        raise InvalidRequest("'session' must be 1 to 128 letters, digits or '_.:-'.", param="session")
    seen: dict[str, int] = {}
    for value in query.get("starting_after", []):
        response_id, _, number = value.rpartition(":")
        if not response_id or not number.lstrip("-").isdigit():
            raise InvalidRequest(f"Invalid 'starting_after' {value!r}: expected '<response id>:<sequence number>'.",
                                 param="starting_after")
        if int(number) > MAX_INTEGER:
            raise InvalidRequest(f"Invalid 'starting_after' {value!r}: the sequence number is too large.",
                                 param="starting_after")
        seen[response_id] = int(number)
    if seen and not session:
        raise InvalidRequest("'starting_after' resumes a session: give its 'session' too.", param="starting_after")
    return session, seen


def _stream_id(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str) or not value or len(value) > STREAM_ID_MAX:
        raise InvalidRequest(f"'stream_id' must be a non-empty string of at most {STREAM_ID_MAX} characters.",
                             param="stream_id")
    return value

