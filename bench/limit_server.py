"""The limit server of bench/serving.py and bench/paced.py: this serving layer with nothing behind it.

Daphne and Django's ASGI handler answer ``POST /v1/responses`` with the same SSE framing
(responses_app/stream/sse.py) as the stack, but the events come from memory: one stream,
recorded from the stack, whose events are read from ``LIMIT_SERVER_FRAMES`` at start. No
database, queue, worker, authentication or validation: the fastest this layer could
serve the same bytes. Each event is framed when it is sent and is its own write, and the
event loop runs between two, as a server that makes its events one at a time in process.

    LIMIT_SERVER_FRAMES=<file> daphne -p <port> bench.limit_server:application

Paced (bench/paced.py's ceiling): with ``LIMIT_SERVER_PACED=1`` the file holds one JSON
line per frame, ``[offset_s, frame]``, recorded from one stream of the stack, and each
frame is sent at its offset from the request, so that every stream keeps the pace that
the stack gives one stream alone.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import django
from django.conf import settings

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    INSTALLED_APPS=[],
    MIDDLEWARE=[],
    DATABASES={},
    SECRET_KEY="limit-server",
    USE_TZ=True,
)
django.setup()

from django.core.asgi import get_asgi_application  # noqa: E402  (needs settings)
from django.http import HttpRequest, HttpResponseBase, JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402

from responses_app.stream.sse import sse_frame, sse_response  # noqa: E402

PACED = os.environ.get("LIMIT_SERVER_PACED") == "1"
_SOURCE = Path(os.environ["LIMIT_SERVER_FRAMES"]).read_bytes()
# (the offset from the request at which it is sent, the event)
SCHEDULE: list[tuple[float, dict[str, Any]]] = (
    [(offset, json.loads(frame.partition("\ndata: ")[2])) for offset, frame in map(json.loads, _SOURCE.splitlines())]
    if PACED else
    [(0.0, json.loads(frame.partition(b"\ndata: ")[2])) for frame in _SOURCE.split(b"\n\n") if frame])


async def one_at_a_time() -> AsyncIterator[bytes]:
    started = asyncio.get_running_loop().time()
    for offset, event in SCHEDULE:
        wait = started + offset - asyncio.get_running_loop().time()
        await asyncio.sleep(wait if wait > 0 else 0)
        yield sse_frame(event)


@csrf_exempt
async def create(request: HttpRequest) -> HttpResponseBase:
    json.loads(request.body)  # what any server does with the request: read it
    return sse_response(one_at_a_time())


async def models(request: HttpRequest) -> HttpResponseBase:
    return JsonResponse({"object": "list", "data": []})


urlpatterns = [path("v1/responses", create), path("v1/models", models)]
application = get_asgi_application()
