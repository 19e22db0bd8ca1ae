"""Management commands for tenants and keys; the contract scripts rely on: the plaintext
key is the last line of create_api_key's output, and nothing else ever prints a secret."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from responses_app.models import ApiKey, ApiKeyScope, Tenant
from responses_app.tenancy.api_keys import authenticate_bearer, create_api_key
from responses_app.wire.errors import AuthenticationFailed

pytestmark = [pytest.mark.django_db, pytest.mark.core]


def run(*args: str) -> list[str]:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue().strip().splitlines()


def test_create_tenant_creates_then_updates_only_the_limits_given(db):
    run("create_tenant", "nina", "--max-concurrent-background", "2", "--requests-per-minute", "60")
    tenant = Tenant.objects.get(name="nina")
    assert (tenant.max_concurrent_background, tenant.requests_per_minute, tenant.max_output_tokens) == (2, 60, None)

    lines = run("create_tenant", "nina", "--max-output-tokens", "1000", "--requests-per-minute", "none")

    tenant.refresh_from_db()
    assert (tenant.max_concurrent_background, tenant.requests_per_minute, tenant.max_output_tokens) == (2, None, 1000)
    assert lines[-1].startswith("Updated tenant nina")
    assert Tenant.objects.filter(name="nina").count() == 1


def test_create_tenant_refuses_a_zero_output_token_limit(db):
    with pytest.raises(CommandError):
        call_command("create_tenant", "oscar", "--max-output-tokens", "0", stdout=io.StringIO())
    assert not Tenant.objects.filter(name="oscar").exists()


def test_create_api_key_prints_a_working_key_last_with_scope_and_expiry(db):
    lines = run("create_api_key", "--tenant", "peggy", "--name", "reporting", "--scope", "read_only",
                "--expires-in-days", "7")
    caller = authenticate_bearer(f"Bearer {lines[-1]}")
    assert (caller.tenant.name, caller.api_key.name, caller.api_key.scope) == ("peggy", "reporting",
                                                                               ApiKeyScope.READ_ONLY)
    expected = timezone.now() + timedelta(days=7)
    assert abs(caller.api_key.expires_at - expected) < timedelta(minutes=1)
    # The default key writes and never expires.
    default = ApiKey.objects.get(prefix=run("create_api_key", "--tenant", "peggy")[-1].split("-")[1])
    assert (default.scope, default.expires_at, default.reasoning_fields) == (ApiKeyScope.READ_WRITE, None, "both")
    one_name = run("create_api_key", "--tenant", "peggy", "--reasoning-fields", "reasoning_content")[-1]
    assert authenticate_bearer(f"Bearer {one_name}").api_key.reasoning_fields == "reasoning_content"


@pytest.mark.parametrize("by", ["prefix", "whole key"])
def test_revoke_api_key_revokes_by_prefix_or_whole_key(db, by):
    key, plaintext = create_api_key("quentin")
    lines = run("revoke_api_key", key.prefix if by == "prefix" else plaintext)
    assert key.prefix in lines[-1] and "Revoked" in lines[-1]
    with pytest.raises(AuthenticationFailed, match="revoked"):
        authenticate_bearer(f"Bearer {plaintext}")
    assert "already revoked" in run("revoke_api_key", key.prefix)[-1]


def test_revoke_api_key_of_an_unknown_prefix_is_an_error(db):
    with pytest.raises(CommandError, match="No API key"):
        call_command("revoke_api_key", "nosuchprefix", stdout=io.StringIO())


def test_list_api_keys_shows_metadata_never_secrets_and_filters_by_tenant(db):
    mine, mine_plaintext = create_api_key("rupert", "ci", scope=ApiKeyScope.READ_ONLY)
    theirs, _ = create_api_key("sybil", "web")
    call_command("revoke_api_key", theirs.prefix, stdout=io.StringIO())

    everything = "\n".join(run("list_api_keys"))
    only_mine = run("list_api_keys", "--tenant", "rupert")

    assert everything.splitlines()[0].split() == ["prefix", "tenant", "name", "scope", "created", "expires", "last",
                                                  "used", "revoked"]
    assert mine.prefix in everything and theirs.prefix in everything
    assert mine_plaintext.split("-", 2)[2] not in everything and mine.secret_hmac not in everything
    [row] = [line for line in only_mine if mine.prefix in line]
    assert row.split()[:4] == [mine.prefix, "rupert", "ci", "read_only"]
    assert all(theirs.prefix not in line for line in only_mine)
    [their_row] = [line for line in everything.splitlines() if theirs.prefix in line]
    assert their_row.split()[-1] != "-"  # the revoked column is filled in
    with pytest.raises(CommandError, match="No tenant"):
        call_command("list_api_keys", "--tenant", "nobody", stdout=io.StringIO())
