"""The one authentication of /v1: a bearer API key resolves to its tenant (tenancy/api_keys.py)."""

from __future__ import annotations

from rest_framework.authentication import BaseAuthentication
from rest_framework.request import Request

from responses_app.models import ApiKey
from responses_app.tenancy.api_keys import Caller, authenticate_bearer


class ApiKeyAuthentication(BaseAuthentication):
    """``request.user`` is the Caller, ``request.auth`` its key; a missing or bad key is a
    401 (AuthenticationFailed in OpenAI's shape), never an anonymous request."""

    def authenticate(self, request: Request) -> tuple[Caller, ApiKey]:
        caller = authenticate_bearer(request.META.get("HTTP_AUTHORIZATION"))
        return caller, caller.api_key

    def authenticate_header(self, request: Request) -> str:
        return "Bearer"
