"""The one throttle of /v1: the tenant's ``requests_per_minute`` on creating responses."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from responses_app.tenancy import quotas

if TYPE_CHECKING:  # DRF imports this module while rest_framework.views initializes
    from rest_framework.views import APIView


class TenantCreateThrottle(BaseThrottle):
    """Counts each create in the tenant's sliding minute (tenancy/quotas.py, in Redis). Past the
    limit the quota's own 429 is raised, with its message and Retry-After, rather than
    DRF's generic one."""

    def allow_request(self, request: Request, view: APIView) -> bool:
        quotas.check_requests_per_minute(request.user.tenant)
        return True
