"""The base of every /v1 view: Django REST framework's request cycle with async handlers.

Handlers are coroutines, since they stream events or wait for a response to finish and
must not hold a thread while they do. DRF's own steps that touch the database
(authentication, the scope permission, the quota throttle) run in the pool of database
threads (lib/asyncdb.db), never on Django's one shared sync thread, where a burst of creates
would queue behind each other. For the same reason handlers return Django responses
(JsonResponse, StreamingHttpResponse): a DRF Response is rendered late, and Django runs
that render on the shared thread too.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponseBase
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.renderers import BaseRenderer
from rest_framework.request import Request
from rest_framework.views import APIView

from responses_app.http.authentication import ApiKeyAuthentication
from responses_app.http.permissions import KeyScopePermission
from responses_app.lib.asyncdb import db
from responses_app.wire.errors import MethodNotAllowed


class IgnoreAccept(BaseContentNegotiation):
    """Answers are JSON, or an event stream where the request's parameters ask for a
    stream, whatever the Accept header says, as in OpenAI's API."""

    def select_parser(self, request: Request, parsers: list) -> Any:
        return parsers[0] if parsers else None

    def select_renderer(self, request: Request, renderers: list[BaseRenderer],
                        format_suffix: str | None = None) -> tuple[BaseRenderer, str]:
        return renderers[0], renderers[0].media_type


class ApiView(APIView):
    authentication_classes = [ApiKeyAuthentication]
    permission_classes = [KeyScopePermission]
    content_negotiation_class = IgnoreAccept
    # A view whose create (its POST handler) starts with one database call sets this and
    # runs DRF's checks at the start of that call (self.initial): one hop to a pool thread
    # instead of two. In a burst, each hop is a place in the pool's queue, and a create
    # waits for both. Its other methods are checked here, as every view's are.
    checks_in_handler = False

    async def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        """DRF's dispatch, with ``initial`` in a database thread and the handler awaited."""
        self.args, self.kwargs = args, kwargs
        drf_request = self.initialize_request(request, *args, **kwargs)
        self.request = drf_request
        self.headers = self.default_response_headers
        try:
            method = drf_request.method.lower()
            handler = getattr(self, method, None) if method in self.http_method_names else None
            unsupported = handler is None or method == "options"
            if unsupported or not (self.checks_in_handler and method == "post"):
                await db(self.initial)(drf_request, *args, **kwargs)
            if unsupported:
                raise MethodNotAllowed(drf_request.method, drf_request.path)
            assert handler is not None  # else unsupported
            response = await handler(drf_request, *args, **kwargs)
        except Exception as exc:
            response = self.handle_exception(exc)
        self.response = self.finalize_response(drf_request, response, *args, **kwargs)
        return self.response
