"""Refusals that Daphne must make before it reads a request's body.

Daphne (over Twisted) reads a whole body, to memory or a temporary file, before the ASGI
application sees the request, and Twisted parses a multipart body itself, answering a
malformed one with a bare 400. So what cannot wait is decided here, on the request line
and headers, in Daphne's request class (``install`` swaps it in; Daphne looks the class
up for each connection):

- a Content-Length over the limit (edge.body_limit), or a chunked body that grows past
  it: 413 in OpenAI's shape, and the rest of the upload is discarded unread;
- a /v1 request with a body and no well-formed API key: 401, before any of the body; a
  body over UNCHECKED_BODY_BYTES (or of unknown length) waits, unread, for its key to be
  looked up (in a thread of the reactor's pool), so that a client without a valid key can
  make the server read at most that much (smaller bodies are read and the API's own
  authentication refuses them, which spares a create a second lookup);
- Twisted's own form and multipart parsing is skipped: Django parses the body, and
  answers a malformed one in OpenAI's shape;
- what Twisted cannot parse as HTTP at all (a malformed request line, header or chunk,
  headers over its size limit) gets its 400 in OpenAI's shape too, not a bare status line.

A refusal closes the connection the way browsers and HTTP clients can read: the answer,
then the write side closed, the client's remaining upload read and dropped for at most
LINGER_S (closing at once would reset the connection, and the client could lose the answer).
"""

from __future__ import annotations

import functools
import json
from typing import Any, cast

from daphne import http_protocol, server
from django.db import close_old_connections
from twisted.internet import reactor
from twisted.internet.threads import deferToThread
from twisted.python.failure import Failure
from twisted.web import http

from responses_app.api.edge import body_limit
from responses_app.tenancy.api_keys import authenticate_bearer, parse_bearer
from responses_app.wire.errors import APIError, AuthenticationFailed, InvalidRequest, RequestTooLarge

API_PREFIX = b"/v1/"
LINGER_S = 5.0
UNCHECKED_BODY_BYTES = 64 * 1024
REASONS = {400: b"Bad Request", 401: b"Unauthorized", 413: b"Content Too Large"}


class EdgeWebRequest(http_protocol.WebRequest):
    _refused = False
    _body_bytes = 0
    _body_limit = 0
    # While the key of a large body is looked up: the transport is paused, and what was
    # already read of the body, and a request that was already whole, wait here.
    _key_pending = False
    _held: list[bytes]
    _whole: tuple[bytes, bytes, bytes] | None = None
    _expects_continue = False

    def gotLength(self, length: int | None) -> None:  # noqa: N802 (Twisted's name)
        # Called once the headers are in and before any of the body.
        if not isinstance(self.channel, http.HTTPChannel):  # HTTP/2 (TLS only): left as it is
            return super().gotLength(length)
        headers = {name.lower(): values[-1] for name, values in self.requestHeaders.getAllRawHeaders()}
        path = getattr(self.channel, "_path", b"")
        self._body_limit = body_limit(path, headers)
        if length is not None and length > self._body_limit:
            return self._refuse(RequestTooLarge(f"The request body ({length} bytes) is larger than "
                                                f"{self._body_limit} bytes."))
        if length != 0 and path.startswith(API_PREFIX):
            authorization = headers.get(b"authorization", b"").decode("latin-1")
            try:
                parse_bearer(authorization)
            except AuthenticationFailed as error:
                return self._refuse(error)
            if length is None or length > UNCHECKED_BODY_BYTES:
                self._check_key_first(authorization)
        return super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:  # noqa: N802
        if self._refused:
            return
        self._body_bytes += len(data)
        if self._body_limit and self._body_bytes > self._body_limit:  # a chunked body has no length to check
            return self._refuse(RequestTooLarge(f"The request body is larger than {self._body_limit} bytes."))
        if self._key_pending:
            self._held.append(data)  # what the last read brought, before the pause took effect
            return None
        return super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:  # noqa: N802
        # Twisted's requestReceived without its form and multipart parsing (Daphne passes
        # the raw body on and never reads ``args``' form values).
        if self._refused:
            return
        if self._key_pending:
            self._whole = (command, path, version)
            return
        self.content.seek(0, 0)
        self.method, self.uri, self.clientproto = command, path, version
        self.path, _, query = path.partition(b"?")
        self.args = http.parse_qs(query, 1) if query else {}
        self.process()

    def _check_key_first(self, authorization: str) -> None:
        self._key_pending, self._held = True, []
        # The client is told to send its body ("100 Continue") once its key is known.
        self._expects_continue = self.requestHeaders.hasHeader(b"expect") and self.channel._version == b"HTTP/1.1"
        self.requestHeaders.removeHeader(b"expect")
        self.channel.transport.pauseProducing()
        deferToThread(_key_refusal, authorization).addBoth(self._key_checked)

    def _key_checked(self, refusal: APIError | Failure | None) -> None:
        self._key_pending = False
        if self._refused or getattr(self, "_disconnected", False):
            return
        if isinstance(refusal, APIError):
            return self._refuse(refusal)
        # A valid key, or a lookup that failed (the database is down): the API decides, as
        # for any request, once the body is in.
        if self._expects_continue and self._whole is None:
            self.channel.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
        held, self._held = self._held, []
        for data in held:
            http_protocol.WebRequest.handleContentChunk(self, data)
        self.channel.transport.resumeProducing()
        if self._whole is not None:
            self.requestReceived(*self._whole)
        return None

    def _refuse(self, error: APIError) -> None:
        self._refused = True
        # Twisted sends "100 Continue" right after gotLength when the client asked for it.
        self.requestHeaders.removeHeader(b"expect")
        # Written raw: the request line is not parsed into method and version yet, and
        # Request.finish would put the channel back to reading the next request.
        transport: Any = self.channel.transport
        transport.write(raw_answer(error))
        if not hasattr(transport, "loseWriteConnection"):
            self.channel.loseConnection()
            return
        self.channel.dataReceived = lambda data: None
        transport.resumeProducing()  # paused while a key was looked up: the rest is read and dropped
        transport.loseWriteConnection()
        # Any: Twisted types the reactor by zope interfaces, whose methods mypy reads with a self.
        cast(Any, reactor).callLater(LINGER_S, transport.abortConnection)


def _key_refusal(authorization: str) -> APIError | None:
    """In a thread of the reactor's pool: why the key is refused, or None."""
    close_old_connections()
    try:
        authenticate_bearer(authorization)
    except AuthenticationFailed as error:
        return error
    return None


class EdgeHTTPFactory(http_protocol.HTTPFactory):
    """Daphne's factory, whose connections answer unparseable HTTP in OpenAI's shape."""

    def buildProtocol(self, addr: Any) -> Any:  # noqa: N802 (Twisted's name)
        protocol = super().buildProtocol(addr)
        channel = getattr(protocol, "_channel", protocol)  # HTTP/1.1 behind Twisted's negotiating wrapper
        channel._respondToBadRequestAndDisconnect = functools.partial(_unparseable, channel)
        channel.lineLengthExceeded = lambda line: _unparseable(channel)  # a line over 16 KiB: no answer otherwise
        return protocol


def _unparseable(channel: http.HTTPChannel) -> None:
    transport: Any = channel.transport  # connected (it read the request), and a zope interface: see _refuse
    transport.write(raw_answer(InvalidRequest("The request could not be parsed as HTTP/1.1.",
                                                      code="invalid_http")))
    channel.loseConnection()


def raw_answer(error: APIError) -> bytes:
    """A whole HTTP/1.1 answer with ``error`` in OpenAI's shape, closing the connection."""
    body = json.dumps(error.body()).encode()
    extra = b"".join(b"%s: %s\r\n" % (name.encode(), value.encode()) for name, value in error.headers().items())
    return (b"HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n"
            b"%s\r\n%s" % (error.status_code, REASONS[error.status_code], len(body), extra, body))


def install() -> None:
    """Make Daphne build its connections and requests with the classes above (idempotent;
    Daphne looks both up when it starts serving, after it imported the application)."""
    http_protocol.WebRequest = EdgeWebRequest
    server.HTTPFactory = EdgeHTTPFactory
