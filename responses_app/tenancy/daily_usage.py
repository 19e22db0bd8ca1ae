"""Daily usage per tenant: each ended response adds its tokens to its tenant's UTC day.

Rows are added to with F() increments, so concurrent workers never lose each other's
counts, and the day's row is created race-safely on first use.
"""

from __future__ import annotations

from datetime import UTC, date
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from responses_app.models import TenantDailyUsage


def add_to_daily_usage(tenant_id: int, usage: dict[str, Any] | None, day: date | None = None) -> None:
    """Count one ended response and its ``usage`` (the Response object's usage dict; None
    when no worker reported any) for the tenant on ``day`` (default: today, UTC)."""
    usage = usage or {}
    increments = {
        "responses": F("responses") + 1,
        "input_tokens": F("input_tokens") + int(usage.get("input_tokens") or 0),
        "output_tokens": F("output_tokens") + int(usage.get("output_tokens") or 0),
        "reasoning_tokens": F("reasoning_tokens")
        + int((usage.get("output_tokens_details") or {}).get("reasoning_tokens") or 0),
    }
    day = day or timezone.now().astimezone(UTC).date()
    rows = TenantDailyUsage.objects.filter(tenant_id=tenant_id, day=day)
    if rows.update(**increments):
        return
    try:
        # A savepoint, so that losing the race to create the row leaves an enclosing
        # transaction usable; the winner's row is then incremented like any other.
        with transaction.atomic():
            TenantDailyUsage.objects.create(tenant_id=tenant_id, day=day)
    except IntegrityError:
        pass
    rows.update(**increments)
