"""Retention: stored responses expire RESPONSE_RETENTION_DAYS after they end (or the
tenant's own number of days; 0 keeps them), are not found from then on, and are purged
in batches with their items and events, never while a running response still reads them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.test import override_settings
from django.utils import timezone

from responses_app import selectors
from responses_app.models import EventLog, InputItem, OutputItem, Response, ResponseEvent, ResponseStatus, Tenant
from responses_app.services.create import create_response
from responses_app.services.ended import end_response
from responses_app.tenancy import retention
from responses_app.validation.create import parse_create_request
from responses_app.wire.errors import NotFound

pytestmark = [pytest.mark.django_db, pytest.mark.core]



def ended(tenant: Tenant, days_ago: float, previous: Response | None = None, **body: Any) -> Response:
    """A response that ended ``days_ago`` days ago, with its items and events."""
    response = running(tenant, previous, **body)
    end_response(response.pk, ResponseStatus.COMPLETED)
    OutputItem.objects.create(response=response, output_index=0, item_id="msg_1", item_type="message",
                              data={"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
                                    "content": [{"type": "output_text", "text": "Hi.", "annotations": []}]})
    Response.objects.filter(pk=response.pk).update(completed_at=timezone.now() - timedelta(days=days_ago))
    return response


def running(tenant: Tenant, previous: Response | None = None, **body: Any) -> Response:
    request = parse_create_request({"model": "echo", "input": "Hello", "background": True, **body,
                                    **({"previous_response_id": previous.pk} if previous else {})})
    return create_response(tenant, request)


def test_expired_responses_are_not_found_before_the_purge_and_gone_after(tenant, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        old, recent = ended(tenant, 31), ended(tenant, 29)
    with pytest.raises(NotFound):
        selectors.get_response(tenant, old.pk)
    with pytest.raises(NotFound):  # nor can a new response continue from it
        running(tenant, previous=old)
    assert selectors.get_response(tenant, recent.pk).pk == recent.pk

    assert retention.purge_expired() == 1
    assert not Response.objects.filter(pk=old.pk).exists()
    for model in (InputItem, OutputItem, ResponseEvent, EventLog):
        assert not model.objects.filter(response_id=old.pk).exists(), model
    assert Response.objects.filter(pk=recent.pk).exists()
    assert OutputItem.objects.filter(response_id=recent.pk).exists()


def test_the_chain_of_a_running_response_is_kept_until_it_ends(tenant, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        # Created while its chain was unexpired; it still runs (a long deferred job) and reads it.
        first = ended(tenant, 0)
        middle = ended(tenant, 0, previous=first)
        last = running(tenant, previous=middle)
        unrelated = ended(tenant, 40)
    for response, days in ((first, 60), (middle, 45)):
        Response.objects.filter(pk=response.pk).update(completed_at=timezone.now() - timedelta(days=days))

    assert retention.purge_expired() == 1
    assert set(Response.objects.filter(tenant=tenant).values_list("pk", flat=True)) == {first.pk, middle.pk, last.pk}

    end_response(last.pk, ResponseStatus.COMPLETED)
    assert retention.purge_expired() == 2
    assert list(Response.objects.filter(tenant=tenant).values_list("pk", flat=True)) == [last.pk]
    assert not Response.objects.filter(pk=unrelated.pk).exists()


@override_settings(RETENTION_PURGE_BATCH=2)
def test_the_purge_goes_in_batches_by_end_time(tenant, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False):
        expired = [ended(tenant, 31 + n) for n in range(5)]
    deletes = []
    with connection.execute_wrapper(lambda execute, sql, *args: (deletes.append(sql) if sql.startswith(
            'DELETE FROM "responses_app_response"') else None, execute(sql, *args))[1]):
        assert retention.purge_expired() == 5
    assert len(deletes) == 3  # 2 + 2 + 1
    assert not Response.objects.filter(pk__in=[r.pk for r in expired]).exists()


def test_a_tenant_keeps_its_own_number_of_days_and_zero_keeps_forever(tenant, django_capture_on_commit_callbacks):
    keeper = Tenant.objects.create(name="keeper", response_retention_days=0)
    brief = Tenant.objects.create(name="brief", response_retention_days=1)
    with django_capture_on_commit_callbacks(execute=False):
        kept = ended(keeper, 3650)
        gone = ended(brief, 2)
        default_kept = ended(tenant, 2)
    assert retention.purge_expired() == 1
    assert Response.objects.filter(pk__in=[kept.pk, default_kept.pk]).count() == 2
    assert not Response.objects.filter(pk=gone.pk).exists()
    with override_settings(RESPONSE_RETENTION_DAYS=0):
        assert retention.expired_before(tenant) is None


def test_the_purge_reads_through_the_end_time_index(tenant):
    if connection.vendor != "postgresql":
        pytest.skip("EXPLAIN's plan is PostgreSQL's")
    with connection.cursor() as cursor:
        # The index must serve the purge's order without a sort, whatever the statistics
        # that earlier tests' rows left say about this tenant's few rows.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute("SET LOCAL enable_sort = off")
        query = Response.objects.filter(tenant=tenant, completed_at__lt=timezone.now()).order_by("completed_at")
        sql, params = query.values("pk").query.sql_with_params()
        cursor.execute("EXPLAIN " + sql, params)
        plan = "\n".join(row[0] for row in cursor.fetchall())
    assert "responses_a_tenant__bcd271_idx" in plan, plan
