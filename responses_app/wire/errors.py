"""Errors in OpenAI's shape: ``{"error": {"message", "type", "param", "code"}}``.

Every failure a client can cause is one of these exceptions; the API's exception handler
(http/exceptions.py) renders them, so the SDK maps each status to its own exception class.
"""

from __future__ import annotations

from typing import Any, TypeVar

Row = TypeVar("Row")


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


def or_not_found(row: Row | None, message: str, param: str) -> Row:
    """``row``, or the 404 that names what was asked for: every store's tenant-scoped get
    (``or_not_found(Batch.objects.filter(tenant=tenant, pk=batch_id).first(), ...)``)."""
    if row is None:
        raise NotFound(message, param=param)
    return row


class Conflict(APIError):
    """The object is busy with other work (a conversation a response is working on)."""

    status_code = 409


class RequestTooLarge(APIError):
    """The body is over a size limit; nothing of it was stored."""

    status_code = 413

    def __init__(self, message: str) -> None:
        super().__init__(message, code="request_too_large")


class MethodNotAllowed(APIError):
    status_code = 405

    def __init__(self, method: str, path: str) -> None:
        super().__init__(f"Method {method} is not allowed on {path}.")


class ServerError(APIError):
    """Something failed on this side; the SDKs retry a 500."""

    status_code = 500
    error_type = "server_error"

    def __init__(self) -> None:
        super().__init__("The server had an error while processing your request.")


class CompactionFailed(APIError):
    """The summarization turn of a compaction ended without a summary (the SDKs retry a 500)."""

    status_code = 500
    error_type = "server_error"


class ServiceUnavailable(APIError):
    """A dependency this server needs (the database) is down for now; the SDKs retry a 503."""

    status_code = 503
    error_type = "server_error"

    def __init__(self, message: str, *, code: str | None = None, retry_after: int = 1) -> None:
        super().__init__(message, code=code)
        self.retry_after = retry_after

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)}


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
