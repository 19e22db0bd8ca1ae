"""/v1/ runs only settings.API_MIDDLEWARE (project/asgi.py); the operator console keeps all
of settings.MIDDLEWARE, its CSRF protection included."""

from __future__ import annotations

import httpx
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.middleware.csrf import CsrfViewMiddleware

from project.asgi import APIHandler, django_asgi_app


def view_middleware(handler: ASGIHandler) -> set[type]:
    """The classes whose process_view hooks the handler runs."""
    return {hook.__self__.__class__ for hook in handler._view_middleware if hasattr(hook, "__self__")}


def test_the_api_handler_builds_its_chain_from_api_middleware_and_leaves_the_settings_as_they_were():
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE
    assert settings.API_MIDDLEWARE == ["django.middleware.security.SecurityMiddleware"]
    # CSRF's view hook is the console's, not the API's (which is CSRF-exempt anyway).
    assert CsrfViewMiddleware in view_middleware(django_asgi_app)
    assert CsrfViewMiddleware not in view_middleware(APIHandler())
    assert "django.middleware.csrf.CsrfViewMiddleware" in settings.MIDDLEWARE


def test_the_console_still_refuses_a_post_without_a_csrf_token_and_the_api_keeps_its_security_headers(
        stack, alice_key):
    root = stack.base_url.removesuffix("/v1")
    with httpx.Client(base_url=root, timeout=30) as client:
        login = client.get("/admin/login/")
        assert login.status_code == 200 and "csrftoken" in login.cookies
        forged = client.post("/admin/login/", data={"username": "x", "password": "y"})
        assert forged.status_code == 403 and "CSRF" in forged.text
        models = client.get("/v1/models", headers={"Authorization": f"Bearer {alice_key}"})
        assert models.status_code == 200
        assert models.headers["X-Content-Type-Options"] == "nosniff"
        assert "set-cookie" not in models.headers
        unauthenticated = client.post("/v1/responses", json={"model": "echo", "input": "hi"})
        assert unauthenticated.status_code == 401 and unauthenticated.json()["error"]["type"]
