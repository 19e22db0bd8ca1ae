"""Per-tenant quotas, key scopes and expiry, and daily usage, against the API in this process.

Every test makes tenants of its own (fresh names), so the limits it sets never reach
alice, bob or another test, and each quota test shows a second tenant unaffected.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import openai
import pytest
from django.utils import timezone

from tests import helpers
from tests.conftest import sdk_client
from tests.helpers import events_of, new_key, reasoning_and_answer, wait_for_status

pytestmark = pytest.mark.core

# A background response that keeps generating for several seconds (one token per 50 ms).
SLOW_INPUT = "Count these words slowly please. " * 20
SLOW_METADATA = {"echo_token_delay_ms": "50"}


def new_tenant(**limits: Any) -> str:
    return helpers.new_tenant("quota", **limits)


def response_count(tenant: str) -> int:
    from responses_app.models import Response

    return Response.objects.filter(tenant__name=tenant).count()


def assert_rate_limited(raised: pytest.ExceptionInfo, code: str) -> int:
    """The error is a 429 in OpenAI's shape with a Retry-After in whole seconds; returns it."""
    error = raised.value
    assert error.status_code == 429
    assert error.code == code
    assert error.body["type"] == "rate_limit_error"
    assert set(error.body) == {"message", "type", "param", "code"}
    retry_after = int(error.response.headers["retry-after"])
    assert 1 <= retry_after <= 60
    return retry_after


@pytest.fixture
def background_responses() -> Iterator[list[tuple[openai.OpenAI, str]]]:
    """Collects (client, response id) of slow background responses; cancels them all after."""
    started: list[tuple[openai.OpenAI, str]] = []
    yield started
    for client, response_id in started:
        try:
            client.responses.cancel(response_id)
        except openai.APIStatusError:
            pass


def start_slow(client: openai.OpenAI, started: list[tuple[openai.OpenAI, str]]) -> str:
    response = client.responses.create(model="echo", input=SLOW_INPUT, background=True, metadata=SLOW_METADATA)
    started.append((client, response.id))
    return response.id


# --- max_concurrent_background -------------------------------------------------------------


def test_the_background_response_beyond_the_concurrency_limit_is_429_and_another_tenant_is_unaffected(
        stack, db_access, background_responses):
    full, other = new_tenant(max_concurrent_background=2), new_tenant(max_concurrent_background=2)
    full_client, other_client = sdk_client(stack, new_key(full)), sdk_client(stack, new_key(other))
    first = start_slow(full_client, background_responses)
    start_slow(full_client, background_responses)
    before = response_count(full)

    with pytest.raises(openai.RateLimitError) as raised:
        full_client.responses.create(model="echo", input="one too many", background=True)

    assert_rate_limited(raised, "concurrency_limit_exceeded")
    assert response_count(full) == before  # the refused request wrote nothing
    assert {full_client.responses.retrieve(id).status for _, id in background_responses} <= {"queued", "in_progress"}
    # The other tenant's slots are its own; foreground responses are not limited.
    start_slow(other_client, background_responses)
    start_slow(other_client, background_responses)
    assert full_client.responses.create(model="echo", input="in the foreground").status == "completed"
    # Cancelling one frees its slot.
    full_client.responses.cancel(first)
    wait_for_status(full_client, first, {"cancelled"})
    start_slow(full_client, background_responses)


# --- requests_per_minute -------------------------------------------------------------------


def test_creates_beyond_requests_per_minute_are_429_with_retry_after_and_another_tenant_is_unaffected(
        stack, db_access):
    limited, other = new_tenant(requests_per_minute=2), new_tenant(requests_per_minute=2)
    limited_client, other_client = sdk_client(stack, new_key(limited)), sdk_client(stack, new_key(other))
    for _ in range(2):
        assert limited_client.responses.create(model="echo", input="Hi").status == "completed"

    with pytest.raises(openai.RateLimitError) as raised:
        limited_client.responses.create(model="echo", input="Hi")

    retry_after = assert_rate_limited(raised, "rate_limit_exceeded")
    assert retry_after >= 30  # the window is a minute and the two creates took a few seconds
    assert response_count(limited) == 2
    for _ in range(2):
        assert other_client.responses.create(model="echo", input="Hi").status == "completed"
    # Reads are not creates: the limited tenant can still read what it made.
    assert limited_client.models.list().data


# --- max_output_tokens ---------------------------------------------------------------------


def test_max_output_tokens_above_the_tenant_limit_is_400_and_the_limit_is_the_default_budget(stack, db_access):
    tenant = new_tenant(max_output_tokens=16)
    client = sdk_client(stack, new_key(tenant))
    long_answer = reasoning_and_answer("a " * 40, "b")

    with pytest.raises(openai.BadRequestError) as raised:
        client.responses.create(model="echo", input="Hi", max_output_tokens=17)
    assert raised.value.status_code == 400
    assert raised.value.param == "max_output_tokens"
    assert response_count(tenant) == 0

    smaller = client.responses.create(model="echo", input="Hi", max_output_tokens=8)
    assert smaller.max_output_tokens == 8
    defaulted = client.responses.create(model="echo", input=long_answer)
    assert defaulted.max_output_tokens == 16
    assert client.responses.retrieve(defaulted.id).max_output_tokens == 16
    # The default is the budget the worker enforces, not just an echoed number.
    assert (defaulted.status, defaulted.incomplete_details.reason) == ("incomplete", "max_output_tokens")
    assert defaulted.usage.output_tokens == 16
    # A tenant without a limit asks for what it likes and gets no default.
    unlimited = sdk_client(stack, new_key(new_tenant()))
    assert unlimited.responses.create(model="echo", input="Hi").max_output_tokens is None
    assert unlimited.responses.create(model="echo", input="Hi", max_output_tokens=4096).status == "completed"


# --- key scopes ----------------------------------------------------------------------------


def test_a_read_only_key_reads_and_streams_but_gets_403_on_create_cancel_and_delete(
        stack, db_access, background_responses):
    from responses_app.models import ApiKeyScope, Response

    tenant = new_tenant()
    writer = sdk_client(stack, new_key(tenant))
    reader = sdk_client(stack, new_key(tenant, scope=ApiKeyScope.READ_ONLY))
    finished = writer.responses.create(model="echo", input="Hello reader")
    running = start_slow(writer, background_responses)

    for attempt in (lambda: reader.responses.create(model="echo", input="Hi"),
                    lambda: reader.responses.create(model="echo", input="Hi", background=True, stream=True),
                    lambda: reader.responses.cancel(running),
                    lambda: reader.responses.delete(finished.id)):
        with pytest.raises(openai.PermissionDeniedError) as raised:
            attempt()
        assert raised.value.status_code == 403
        assert raised.value.body["type"] == "permission_error"
        assert raised.value.code == "insufficient_permissions"
        assert "read-only" in raised.value.message

    assert response_count(tenant) == 2
    assert Response.objects.get(pk=running).cancel_requested is False
    assert reader.responses.retrieve(finished.id).output_text == writer.responses.retrieve(finished.id).output_text
    events = events_of(reader.responses.retrieve(finished.id, stream=True))
    assert events[-1]["type"] == "response.completed"
    assert [item.id for item in reader.responses.input_items.list(finished.id).data]
    assert reader.models.list().data
    assert reader.responses.retrieve(running).status in ("queued", "in_progress")


# --- key expiry and revocation -------------------------------------------------------------


def test_an_expired_or_revoked_key_is_401_and_a_key_expiring_later_works(stack, db_access):
    from responses_app.models import ApiKey
    from responses_app.tenancy.api_keys import revoke_api_key

    tenant = new_tenant()
    expired = new_key(tenant, expires_at=timezone.now() - timedelta(seconds=1))
    later = new_key(tenant, expires_at=timezone.now() + timedelta(days=1))
    revoked = new_key(tenant)
    assert sdk_client(stack, revoked).models.list().data
    revoke_api_key(ApiKey.objects.get(prefix=revoked.split("-")[1]))

    for key, reason in ((expired, "expired"), (revoked, "revoked")):
        client = sdk_client(stack, key)
        for attempt in (lambda: client.responses.create(model="echo", input="Hi"), client.models.list):
            with pytest.raises(openai.AuthenticationError) as raised:
                attempt()
            assert raised.value.status_code == 401
            assert raised.value.code == "invalid_api_key"
            assert reason in raised.value.message
    assert response_count(tenant) == 0
    assert sdk_client(stack, later).responses.create(model="echo", input="Hi").status == "completed"


# --- daily usage ---------------------------------------------------------------------------


def usage_totals(tenant: str) -> dict[str, int]:
    from django.db.models import Sum

    from responses_app.models import TenantDailyUsage

    fields = ("responses", "input_tokens", "output_tokens", "reasoning_tokens")
    sums = TenantDailyUsage.objects.filter(tenant__name=tenant).aggregate(**{f: Sum(f) for f in fields})
    return {field: sums[field] or 0 for field in fields}


def test_each_ended_response_adds_its_usage_to_its_tenants_day(stack, db_access, background_responses):
    from responses_app.models import TenantDailyUsage

    tenant, other = new_tenant(), new_tenant()
    client = sdk_client(stack, new_key(tenant))
    other_before = usage_totals(other)

    first = client.responses.create(model="echo", input=reasoning_and_answer("Let me think.", "Done."))
    second = client.responses.create(model="echo", input="Just an answer")
    cancelled = start_slow(client, background_responses)
    wait_for_status(client, cancelled, {"in_progress"})  # its worker reports what it used so far
    client.responses.cancel(cancelled)
    cancelled_usage = wait_for_status(client, cancelled, {"cancelled"}).usage

    usages = [first.usage, second.usage, cancelled_usage]
    assert first.usage.output_tokens_details.reasoning_tokens > 0
    assert usage_totals(tenant) == {
        "responses": 3,
        "input_tokens": sum(u.input_tokens for u in usages),
        "output_tokens": sum(u.output_tokens for u in usages),
        "reasoning_tokens": sum(u.output_tokens_details.reasoning_tokens for u in usages),
    }
    # One row per UTC day (these ran on one day unless the test straddled midnight).
    assert TenantDailyUsage.objects.filter(tenant__name=tenant).count() in (1, 2)
    assert usage_totals(other) == other_before
