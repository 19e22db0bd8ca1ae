"""The one exception handler of /v1: every error in OpenAI's shape
``{"error": {"message", "type", "param", "code"}}``, so the SDK raises its matching class."""

from __future__ import annotations

import logging
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.db import InterfaceError, OperationalError
from django.http import Http404, JsonResponse
from django.http.multipartparser import MultiPartParserError
from rest_framework import exceptions as drf_exceptions

from responses_app.wire.errors import (
    APIError,
    AuthenticationFailed,
    InvalidRequest,
    MethodNotAllowed,
    NotFound,
    PermissionDenied,
    RequestTooLarge,
    ServerError,
    ServiceUnavailable,
)

log = logging.getLogger(__name__)


def error_response(error: APIError) -> JsonResponse:
    response = JsonResponse(error.body(), status=error.status_code)
    for name, value in error.headers().items():
        response[name] = value
    return response


def exception_handler(exc: Exception, context: dict[str, Any]) -> JsonResponse:
    """DRF's EXCEPTION_HANDLER: our errors as they are, DRF's and Django's translated, and
    anything else a logged 500 (the SDKs retry those)."""
    return error_response(_as_api_error(exc, context.get("request")))


def _as_api_error(exc: Exception, request: Any) -> APIError:
    if isinstance(exc, APIError):
        return exc
    if isinstance(exc, drf_exceptions.MethodNotAllowed):
        return MethodNotAllowed(request.method, request.path)
    if isinstance(exc, (drf_exceptions.NotAuthenticated, drf_exceptions.AuthenticationFailed)):
        return AuthenticationFailed(str(exc.detail))
    if isinstance(exc, drf_exceptions.PermissionDenied):
        return PermissionDenied(str(exc.detail))
    if isinstance(exc, (Http404, drf_exceptions.NotFound)):
        return NotFound(f"Invalid URL ({request.method} {request.path}).")
    if isinstance(exc, RequestDataTooBig):
        return RequestTooLarge(f"The request body is larger than {settings.JSON_BODY_MAX_BYTES} bytes.")
    if isinstance(exc, (SuspiciousOperation, MultiPartParserError)):
        # Django's parsers refusing a body (too many multipart parts or fields, a malformed
        # multipart body) before anything of it was stored.
        return InvalidRequest(f"The request body could not be read: {exc}.", code="invalid_body")
    if isinstance(exc, drf_exceptions.APIException) and exc.status_code < 500:
        # The rest of DRF's client errors (a ValidationError, say): views here raise our own.
        return InvalidRequest(str(exc.detail))
    if isinstance(exc, (OperationalError, InterfaceError)):
        # The database is down or restarting (a refused or broken connection): say so, and
        # when to retry, rather than a 500. Nothing was half-written: every write is atomic.
        log.warning("database unavailable in %s %s: %s", request.method, request.path, exc)
        return ServiceUnavailable("The database is unavailable; try again shortly.", code="database_unavailable")
    log.error("unhandled error in %s %s", request.method, request.path, exc_info=exc)
    return ServerError()
