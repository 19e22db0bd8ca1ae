"""The process's API key cache (tenancy/key_cache.py): a resolved key costs no query, and
any change to a key or tenant, in this process or another, holds from the next request on."""

from __future__ import annotations

import pytest
from django.utils import timezone

from responses_app.lib import redis_client
from responses_app.lib.redis_client import shared_client
from responses_app.models import ApiKey, Tenant
from responses_app.tenancy import key_cache
from responses_app.tenancy.api_keys import authenticate_bearer, create_api_key, revoke_api_key
from responses_app.wire.errors import AuthenticationFailed
from tests.helpers import new_tenant

pytestmark = [pytest.mark.django_db, pytest.mark.core]


@pytest.fixture
def key() -> tuple[ApiKey, str]:
    key_cache.cache.clear()
    row, key = create_api_key(new_tenant("keys"))
    authenticate_bearer(f"Bearer {key}")  # resolved once: cached, last_used_at written
    return row, key


def test_a_resolved_key_is_authenticated_again_without_a_query(key, django_assert_num_queries):
    row, plaintext = key
    with django_assert_num_queries(0):
        caller = authenticate_bearer(f"Bearer {plaintext}")
    assert (caller.api_key.pk, caller.tenant.pk) == (row.pk, row.tenant_id)
    with pytest.raises(AuthenticationFailed):  # the secret is still checked
        authenticate_bearer(f"Bearer {plaintext[:-4]}abcd")


def test_a_revocation_holds_from_the_next_request(key):
    row, plaintext = key
    assert revoke_api_key(row)
    with pytest.raises(AuthenticationFailed, match="revoked"):
        authenticate_bearer(f"Bearer {plaintext}")


def test_a_change_announced_by_another_process_empties_this_ones_cache(key):
    row, plaintext = key
    # Another process revokes the key: the row changes, and the epoch moves in Redis.
    ApiKey.objects.filter(pk=row.pk).update(revoked_at=timezone.now())
    assert authenticate_bearer(f"Bearer {plaintext}").api_key.revoked_at is None  # not announced yet: cached
    shared_client().incr(key_cache.EPOCH_KEY)
    with pytest.raises(AuthenticationFailed, match="revoked"):
        authenticate_bearer(f"Bearer {plaintext}")


def test_a_tenant_saved_with_new_limits_is_read_again(key):
    row, plaintext = key
    tenant = Tenant.objects.get(pk=row.tenant_id)
    tenant.max_concurrent_background = 3
    tenant.save()
    assert authenticate_bearer(f"Bearer {plaintext}").tenant.max_concurrent_background == 3


def test_without_redis_every_request_reads_the_database(key, settings, django_assert_num_queries):
    row, plaintext = key
    settings.REDIS_URL = "redis://127.0.0.1:1/0"  # nothing listens there
    redis_client._client = None
    try:
        with django_assert_num_queries(1):
            assert authenticate_bearer(f"Bearer {plaintext}").api_key.pk == row.pk
    finally:
        redis_client._client = None  # made again from the restored setting


def test_with_no_cache_time_nothing_is_kept(key, settings, django_assert_num_queries):
    settings.API_KEY_CACHE_S = 0
    with django_assert_num_queries(1):
        authenticate_bearer(f"Bearer {key[1]}")


def test_a_new_key_or_tenant_is_announced_to_no_one_and_a_changed_one_is(django_capture_on_commit_callbacks):
    # A new row is in no process's cache (and the first `make run` makes the demo key before
    # its Redis is up: announcing it warned for nothing).
    with django_capture_on_commit_callbacks() as created:
        row, _ = create_api_key(new_tenant("fresh"))
    assert created == []
    with django_capture_on_commit_callbacks() as changed:
        row.tenant.max_concurrent_background = 2
        row.tenant.save()
        row.name = "renamed"
        row.save()
    assert [callback.__qualname__ for callback in changed] == ["keys_changed.<locals>.bump"] * 2
