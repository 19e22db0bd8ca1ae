"""Standard Webhooks signatures, as the openai SDK's ``webhooks.unwrap`` verifies them.

The secret is ``whsec_`` + base64 of 32 random bytes; a delivery carries ``webhook-id``,
``webhook-timestamp`` and ``webhook-signature: v1,<base64 HMAC-SHA256 of
"{id}.{timestamp}.{body}">``, one ``v1,`` value per secret that is valid (space-separated:
during a rotation that keeps the old secret, a receiver with either one accepts it).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def secret_hint(secret: str) -> str:
    """What the API shows of a secret after it was created: its prefix and last 4 characters."""
    return f"{SECRET_PREFIX}****{secret[-4:]}"


def sign(webhook_id: str, timestamp: int, body: str, secret: str) -> str:
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    digest = hmac.new(key, f"{webhook_id}.{timestamp}.{body}".encode(), hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(webhook_id: str, timestamp: int, body: str, signing_secrets: list[str]) -> dict[str, str]:
    return {
        "content-type": "application/json",
        "webhook-id": webhook_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": " ".join(sign(webhook_id, timestamp, body, secret) for secret in signing_secrets),
    }
