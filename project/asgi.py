"""ASGI entry point served by Daphne: HTTP goes to Django (API, SSE, admin), WebSocket
to the Responses WebSocket at /v1/responses (client.responses.connect())."""

from __future__ import annotations

import os
from typing import Any

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")
django_asgi_app = get_asgi_application()

from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402  (needs Django set up)
from django.conf import settings  # noqa: E402
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402
from django.core.handlers.asgi import ASGIHandler  # noqa: E402
from django.urls import path  # noqa: E402

from responses_app.api import daphne_edge  # noqa: E402
from responses_app.api.edge import EdgeChecks  # noqa: E402
from responses_app.api.websocket.consumer import ResponsesSocket  # noqa: E402

API_PREFIX = "/v1/"


class APIHandler(ASGIHandler):
    """Django for the API, with settings.API_MIDDLEWARE instead of settings.MIDDLEWARE. In
    an async handler each of Django's own middleware runs its hooks in one or two hops to a
    single shared sync thread, per request: the console's middleware took a quarter of
    Daphne's CPU per streamed response, and a burst of creates queued on that thread."""

    def load_middleware(self, is_async: bool = False) -> None:
        # Django builds the chain from settings.MIDDLEWARE; swapped only while it does, once,
        # when this module is imported (before Daphne serves anything).
        console_middleware = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = console_middleware


class APIRouter:
    """/v1/ to the API handler, every other path (admin, health, metrics) to Django's own."""

    def __init__(self, api: ASGIHandler, console: ASGIHandler) -> None:
        self.api = api
        self.console = console

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        handler = self.api if scope["path"].startswith(API_PREFIX) else self.console
        await handler(scope, receive, send)


# Daphne's requests refuse what must not be read (over-large or unauthenticated bodies)
# before reading it; Daphne imports this module before it serves anything.
daphne_edge.install()

# The admin's CSS and JS come straight from the installed apps, so the operator console
# works under Daphne alone; a deployment with a CDN or proxy may serve `collectstatic` instead.
application = ProtocolTypeRouter({
    "http": ASGIStaticFilesHandler(APIRouter(api=EdgeChecks(APIHandler()), console=django_asgi_app)),
    "websocket": URLRouter([path("v1/responses", ResponsesSocket.as_asgi())]),
})
