"""Quotas and daily usage below the HTTP layer: the services the API and workers call."""

from __future__ import annotations

from datetime import date

import pytest
from django.db import connection

from responses_app.models import ACTIVE_STATUSES, Response, ResponseEvent, ResponseStatus, Tenant, TenantDailyUsage
from responses_app.services.cancel import request_cancel
from responses_app.tenancy import quotas
from responses_app.tenancy.daily_usage import add_to_daily_usage
from responses_app.wire.errors import RateLimited

pytestmark = [pytest.mark.django_db, pytest.mark.core]

USAGE = {"input_tokens": 10, "output_tokens": 7, "output_tokens_details": {"reasoning_tokens": 3}}


def test_usage_adds_up_per_tenant_and_day():
    tenant, other = Tenant.objects.create(name="t1"), Tenant.objects.create(name="t2")
    day, next_day = date(2025, 3, 1), date(2025, 3, 2)
    add_to_daily_usage(tenant.pk, USAGE, day)
    add_to_daily_usage(tenant.pk, USAGE, day)
    add_to_daily_usage(tenant.pk, None, day)  # ended without a worker: counted, no tokens
    add_to_daily_usage(tenant.pk, USAGE, next_day)
    add_to_daily_usage(other.pk, USAGE, day)

    rows = TenantDailyUsage.objects.filter(tenant=tenant).values_list(
        "day", "responses", "input_tokens", "output_tokens", "reasoning_tokens")
    assert list(rows) == [(next_day, 1, 10, 7, 3), (day, 3, 20, 14, 6)]
    assert TenantDailyUsage.objects.get(tenant=other).responses == 1


def test_a_queued_response_cancelled_without_a_worker_counts_as_a_response():
    tenant = Tenant.objects.create(name="t3")
    response = Response.objects.create(tenant=tenant, model="echo", background=True, last_sequence_number=0)
    ResponseEvent.objects.create(response=response, sequence_number=0, type="response.created", data={})
    request_cancel(response)
    assert response.status == ResponseStatus.CANCELLED
    row = TenantDailyUsage.objects.get(tenant=tenant)
    assert (row.responses, row.input_tokens, row.output_tokens) == (1, 0, 0)


def test_the_background_slot_is_refused_at_the_limit_and_only_counts_active_background_responses():
    tenant = Tenant.objects.create(name="t4", max_concurrent_background=2)
    background, foreground = True, False
    for status, is_background in ((ResponseStatus.IN_PROGRESS, True), (ResponseStatus.COMPLETED, True),
                                  (ResponseStatus.QUEUED, False)):
        Response.objects.create(tenant=tenant, model="echo", status=status, background=is_background)
    quotas.reserve_background_slot(tenant, background)  # one active background response of two

    Response.objects.create(tenant=tenant, model="echo", status=ResponseStatus.QUEUED, background=True)
    with pytest.raises(RateLimited) as raised:
        quotas.reserve_background_slot(tenant, background)
    assert (raised.value.status_code, raised.value.code) == (429, "concurrency_limit_exceeded")
    assert raised.value.headers()["Retry-After"] == str(quotas.CONCURRENCY_RETRY_AFTER_S)
    quotas.reserve_background_slot(tenant, foreground)
    quotas.reserve_background_slot(Tenant.objects.create(name="t5", max_concurrent_background=2), background)


def test_the_concurrency_limits_read_only_a_tenants_responses_in_progress(tenant):
    """Every create counts its tenant's responses in progress: through the (tenant, status)
    index, not by walking all the tenant's responses (50,000 after a batch). SQLite plans
    without statistics, so the index must be there for it to choose."""
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL chooses among its indexes by the statistics of the moment")
    index = next(index.name for index in Response._meta.indexes if index.fields == ["tenant", "status"])
    for background in (False, True):
        query = Response.objects.filter(status__in=ACTIVE_STATUSES, tenant=tenant, background=background)
        sql, params = query.values("pk").query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = "\n".join(row[-1] for row in cursor.fetchall())
        assert f"USING INDEX {index} (tenant_id=? AND status=?)" in plan, plan
