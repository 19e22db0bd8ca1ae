"""API keys: ``sk-<prefix>-<secret>``; stored as the prefix plus HMAC-SHA256(secret).

The prefix is a public lookup handle (it is shown in the admin); the secret never
touches the database. The HMAC key is a dedicated setting, so a database dump alone
cannot be used to verify guesses.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from typing import cast

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from responses_app.models import ApiKey, ApiKeyScope, EventNames, ReasoningFields, Tenant
from responses_app.tenancy import key_cache
from responses_app.wire.errors import AuthenticationFailed

KEY_PATTERN = re.compile(r"^sk-([a-z0-9]{12})-([A-Za-z0-9_\-]{32,128})$")
LAST_USED_RESOLUTION_S = 60


@dataclass(frozen=True)
class Caller:
    """Who is calling: the tenant every query is scoped to, and the key used."""

    tenant: Tenant
    api_key: ApiKey

    # DRF treats request.user as the authenticated principal.
    is_authenticated = True

    @property
    def can_write(self) -> bool:
        return self.api_key.scope == ApiKeyScope.READ_WRITE


def _secret_hmac(secret: str) -> str:
    return hmac.new(settings.API_KEY_HMAC_SECRET.encode(), secret.encode(), hashlib.sha256).hexdigest()


def create_api_key(
    tenant_name: str,
    name: str = "",
    *,
    # A TextChoices member is a str; mypy, without Django's stubs, sees its (value, label).
    scope: str = cast(str, ApiKeyScope.READ_WRITE),
    expires_at: datetime | None = None,
    event_names: str = cast(str, EventNames.OPENAI),
    reasoning_fields: str = cast(str, ReasoningFields.BOTH),
) -> tuple[ApiKey, str]:
    """Create a key (and its tenant if needed). Returns the row and the plaintext key,
    which exists only here."""
    prefix = "".join(secrets.choice("abcdefghijklmnopqrstuvwxyz0123456789") for _ in range(12))
    secret = secrets.token_urlsafe(32)
    with transaction.atomic():
        tenant, _ = Tenant.objects.get_or_create(name=tenant_name)
        key = ApiKey.objects.create(tenant=tenant, name=name, scope=scope, expires_at=expires_at, prefix=prefix,
                                    secret_hmac=_secret_hmac(secret), event_names=event_names,
                                    reasoning_fields=reasoning_fields)
    return key, f"sk-{prefix}-{secret}"


def revoke_api_key(key: ApiKey) -> bool:
    """Revoke a key for good. Returns False if it was revoked already (nothing changes)."""
    now = timezone.now()
    revoked = ApiKey.objects.filter(pk=key.pk, revoked_at__isnull=True).update(revoked_at=now)
    if revoked:
        key.revoked_at = now
        key_cache.keys_changed()
    return bool(revoked)


def prefix_of(prefix_or_key: str) -> str:
    """The lookup prefix of a full ``sk-<prefix>-<secret>`` key, or the argument itself."""
    match = KEY_PATTERN.match(prefix_or_key.strip())
    return match.group(1) if match else prefix_or_key.strip()


def parse_bearer(header: str | None) -> tuple[str, str]:
    """The (prefix, secret) of a well-formed ``Bearer sk-...`` header, or AuthenticationFailed;
    looks nothing up, so that a request can be refused before its body is read."""
    if not header:
        raise AuthenticationFailed("You didn't provide an API key. Use the header 'Authorization: Bearer <key>'.")
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise AuthenticationFailed("Malformed Authorization header; expected 'Bearer <key>'.")
    match = KEY_PATTERN.match(token.strip())
    if match is None:
        raise AuthenticationFailed("Incorrect API key provided.", code="invalid_api_key")
    return match.group(1), match.group(2)


def authenticate_bearer(header: str | None) -> Caller:
    """Resolve an ``Authorization`` header to a caller or raise AuthenticationFailed (401)."""
    prefix, secret = parse_bearer(header)
    key = key_cache.cache.get(prefix)
    if key is None:
        key = ApiKey.objects.select_related("tenant").filter(prefix=prefix).first()
        if key is not None:
            key_cache.cache.put(prefix, key)
    if key is None or not hmac.compare_digest(key.secret_hmac, _secret_hmac(secret)):
        raise AuthenticationFailed("Incorrect API key provided.", code="invalid_api_key")
    if key.revoked_at is not None:
        raise AuthenticationFailed("This API key has been revoked.", code="invalid_api_key")
    if key.expires_at is not None and key.expires_at <= timezone.now():
        raise AuthenticationFailed(f"This API key expired at {key.expires_at.isoformat()}.", code="invalid_api_key")
    _touch_last_used(key)
    return Caller(tenant=key.tenant, api_key=key)


def _touch_last_used(key: ApiKey) -> None:
    # At most one write per key per minute: authentication must stay a read.
    now = timezone.now()
    if key.last_used_at is None or (now - key.last_used_at).total_seconds() >= LAST_USED_RESOLUTION_S:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        key.last_used_at = now
