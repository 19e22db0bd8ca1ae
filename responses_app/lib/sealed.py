"""Data a client carries for the server and hands back unchanged: encrypted and
authenticated (AES-256-GCM), and bound to a context (a tenant) that must match on the
way back, so that it can be neither read, altered nor replayed elsewhere.

Keys come from secrets (settings.REASONING_ENCRYPTION_KEYS), one per purpose: the first
seals, every one opens, which is how a secret is rotated.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

PREFIX = "sealed1_"
NONCE_BYTES = 12


class Unsealable(ValueError):
    """Not sealed by this server with a current secret, altered, or bound to another context."""


def seal(payload: Any, *, purpose: str, context: str, secrets: list[str]) -> str:
    nonce = os.urandom(NONCE_BYTES)
    plain = json.dumps(payload, separators=(",", ":")).encode()
    sealed = AESGCM(_key(secrets[0], purpose)).encrypt(nonce, plain, context.encode())
    return PREFIX + base64.urlsafe_b64encode(nonce + sealed).decode()


def unseal(token: str, *, purpose: str, context: str, secrets: list[str]) -> Any:
    if not token.startswith(PREFIX):
        raise Unsealable("not sealed by this server")
    try:
        raw = base64.urlsafe_b64decode(token[len(PREFIX):].encode())
    except ValueError as error:
        raise Unsealable("not valid base64") from error
    nonce, sealed = raw[:NONCE_BYTES], raw[NONCE_BYTES:]
    for secret in secrets:
        try:
            plain = AESGCM(_key(secret, purpose)).decrypt(nonce, sealed, context.encode())
        except (InvalidTag, ValueError):
            continue
        return json.loads(plain)
    raise Unsealable("altered, sealed with a retired secret, or for another tenant")


def _key(secret: str, purpose: str) -> bytes:
    """A 256-bit key of its own for each purpose, derived from the secret."""
    return hmac.new(secret.encode(), f"sealed:{purpose}".encode(), hashlib.sha256).digest()
