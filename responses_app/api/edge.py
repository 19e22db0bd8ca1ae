"""The first checks of every /v1 HTTP request, on its request line and headers alone.

The body limit (413) is applied by Daphne's request class before the body is read
(daphne_edge.py); the ASGI middleware here refuses a NUL in the path or the query (no id
or cursor holds one, and PostgreSQL refuses to compare with one) before Django routes it.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings

from responses_app.wire.errors import APIError, InvalidRequest

FILES_PATH = b"/v1/files"


def body_limit(path: bytes, headers: dict[bytes, bytes]) -> int:
    """The most bytes a body may have: a file upload's cap (plus room for the multipart
    framing: the Files API's, or a container file's), or the JSON body cap."""
    if headers.get(b"content-type", b"").lower().startswith(b"multipart/form-data"):
        cap = settings.FILE_MAX_BYTES if path.split(b"?", 1)[0] == FILES_PATH else settings.CONTAINER_FILE_MAX_BYTES
        return cap + 2**20
    return settings.JSON_BODY_MAX_BYTES


def refusal(scope: dict[str, Any]) -> APIError | None:
    """Why this request is refused before its body is read, or None."""
    if "\x00" in scope["path"] or b"%00" in scope.get("query_string", b""):
        return InvalidRequest("The URL contains a NUL character (%00), which no id or parameter may hold.",
                              code="invalid_url")
    return None


async def send_error(send: Any, error: APIError) -> None:
    body = json.dumps(error.body()).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    headers += [(name.lower().encode(), value.encode()) for name, value in error.headers().items()]
    await send({"type": "http.response.start", "status": error.status_code, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class EdgeChecks:
    """ASGI middleware around the API handler."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        error = refusal(scope)
        if error is not None:
            await send_error(send, error)
            return
        await self.app(scope, receive, send)
