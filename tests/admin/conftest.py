"""The console's own tests: its operators (tests/operators.py), and responses made as the API
makes them."""

from __future__ import annotations

from typing import Any

from responses_app.models import Response, Tenant
from responses_app.services.create import create_response
from responses_app.validation.create import parse_create_request
from tests.operators import operator_client, viewer_client  # noqa: F401 - fixtures of this folder


def create(tenant: Tenant, django_capture_on_commit_callbacks: Any, **body: Any) -> Response:
    """A response made the way the API makes it; its on_commit enqueue is not run."""
    with django_capture_on_commit_callbacks(execute=False):
        return create_response(tenant, parse_create_request({"model": "echo", "input": "Hello", **body}))
