"""Middleware of the operator console (settings.MIDDLEWARE)."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


def frame_ancestors_none(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """``frame-ancestors 'none'``, the CSP form of X-Frame-Options: DENY, which browsers
    prefer where they know both; a page that sets its own policy keeps it."""
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        response.headers.setdefault("Content-Security-Policy", "frame-ancestors 'none'")
        return response
    return middleware
