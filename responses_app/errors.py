"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.

Every failure a client can cause is one of these exceptions; views and DRF's exception
handler render them, so the SDK maps each status to its own exception class.
"""

from __future__ import annotations

from typing import Any

from django.http import JsonResponse
from rest_framework import exceptions as drf_exceptions
from rest_framework.response import Response as DRFResponse


class APIError(Exception):
    status_code = 400
    error_type = "invalid_request_error"

    def __init__(self, message: str, *, param: str | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param
        self.code = code

    def body(self) -> dict[str, Any]:
        return {"error": {"message": self.message, "type": self.error_type, "param": self.param, "code": self.code}}

    def headers(self) -> dict[str, str]:
        return {}


class InvalidRequest(APIError):
    status_code = 400


class AuthenticationFailed(APIError):
    status_code = 401

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message, code=code)

    def headers(self) -> dict[str, str]:
        return {"WWW-Authenticate": "Bearer"}


class PermissionDenied(APIError):
    """The key is valid but may not do this (a read-only key asking to write)."""

    status_code = 403
    error_type = "permission_error"


class NotFound(APIError):
    status_code = 404


class RateLimited(APIError):
    """A quota is used up for now; ``retry_after`` (whole seconds) becomes Retry-After,
    which the SDKs honour when they retry."""

    status_code = 429
    error_type = "rate_limit_error"

    def __init__(self, message: str, *, retry_after: int, code: str = "rate_limit_exceeded") -> None:
        super().__init__(message, code=code)
        self.retry_after = max(1, retry_after)

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


_JSON_TYPE_NAMES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object"}


def invalid_type(param: str, expected: str, value: Any) -> InvalidRequest:
    """The 400 for a parameter of the wrong JSON type, worded as OpenAI words it."""
    got = _JSON_TYPE_NAMES.get(type(value), "null" if value is None else type(value).__name__)
    return InvalidRequest(f"Invalid type for '{param}': expected {expected}, but got {got}.", param=param,
                          code="invalid_type")


def error_response(error: APIError) -> JsonResponse:
    response = JsonResponse(error.body(), status=error.status_code)
    for name, value in error.headers().items():
        response[name] = value
    return response


def drf_exception_handler(exc: Exception, context: dict) -> DRFResponse | None:
    """Render our errors and DRF's own (parse errors, 405, ...) in OpenAI's shape."""
    if isinstance(exc, APIError):
        return DRFResponse(exc.body(), status=exc.status_code, headers=exc.headers())
    if isinstance(exc, drf_exceptions.ParseError):
        error = InvalidRequest(f"We could not parse the JSON body of your request. ({exc.detail})")
    elif isinstance(exc, drf_exceptions.MethodNotAllowed):
        error = InvalidRequest(str(exc.detail))
        error.status_code = 405
    elif isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        error = AuthenticationFailed(str(exc.detail))
    elif isinstance(exc, drf_exceptions.APIException):
        error = InvalidRequest(str(exc.detail))
        error.status_code = exc.status_code
    else:
        return None
    return DRFResponse(error.body(), status=error.status_code, headers=error.headers())
