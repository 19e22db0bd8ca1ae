from __future__ import annotations

from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.urls import include, path
from django.views.defaults import page_not_found

from responses_app.http.exceptions import error_response
from responses_app.observability import views as observability
from responses_app.wire.errors import NotFound

urlpatterns = [
    path("admin/", admin.site.urls),
    path("healthz", observability.healthz),
    path("metrics", observability.metrics),
    path("v1/", include("responses_app.api.urls")),
]


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """API clients get OpenAI's error shape for unknown paths; people get Django's page."""
    if request.path.startswith("/v1/"):
        return error_response(NotFound(f"Invalid URL ({request.method} {request.path})."))
    return page_not_found(request, exception)


handler404 = not_found
