"""The two operator endpoints. Neither needs an API key: they expose no tenant's data, only
the deployment's state (which load balancers and Prometheus must reach without one)."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.http import require_safe
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from responses_app.lib.asyncdb import db
from responses_app.observability.collector import REGISTRY
from responses_app.observability.health import health_report


@require_safe
async def healthz(request: HttpRequest) -> HttpResponse:
    """200 when every check passed, 503 otherwise; the body names every check either way."""
    report = await health_report()
    response = JsonResponse(report, status=200 if report["status"] == "ok" else 503)
    response["Cache-Control"] = "no-store"
    return response


@require_safe
async def metrics(request: HttpRequest) -> HttpResponse:
    # The scrape queries the database and Redis: in a pool thread, off the event loop.
    body = await db(generate_latest)(REGISTRY)
    return HttpResponse(body, content_type=CONTENT_TYPE_LATEST)
