"""The one permission of /v1: what the caller's key scope allows."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.permissions import SAFE_METHODS, BasePermission
from rest_framework.request import Request

from responses_app.wire.errors import PermissionDenied

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views initializes
    from rest_framework.views import APIView


class KeyScopePermission(BasePermission):
    """A read-only key may read and stream; every other method is a write (create, cancel,
    delete, and any write endpoint added later), except on a view that says it writes
    nothing (``writes = False``: a POST that only computes, like input token counts).
    Checked before the view looks anything up, so a 403 never tells whether an id exists."""

    def has_permission(self, request: Request, view: APIView) -> bool:
        if request.method in SAFE_METHODS or request.user.can_write or not getattr(view, "writes", True):
            return True
        raise PermissionDenied(
            "This API key is read-only: it may retrieve and stream responses, list input items and models, "
            "but not create, cancel or delete responses.",
            code="insufficient_permissions",
        )
