"""``reasoning.encrypted_content``: a reasoning item's content, sealed for a client that
keeps no state on the server (store=false, as Codex runs) to hand back on its next turn,
where the model needs its reasoning again (harmony keeps it before a tool call)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from responses_app.lib.sealed import Unsealable, seal, unseal

INCLUDE = "reasoning.encrypted_content"
PURPOSE = "reasoning"

__all__ = ["INCLUDE", "Unsealable", "encrypted_content", "reasoning_content"]


def encrypted_content(tenant_id: int, content: list[dict[str, Any]]) -> str:
    return seal(content, purpose=PURPOSE, context=str(tenant_id), secrets=settings.REASONING_ENCRYPTION_KEYS)


def reasoning_content(tenant_id: int, token: str) -> list[dict[str, Any]]:
    """The reasoning_text parts sealed in ``token`` for this tenant; raises Unsealable."""
    content = unseal(token, purpose=PURPOSE, context=str(tenant_id), secrets=settings.REASONING_ENCRYPTION_KEYS)
    if not isinstance(content, list):
        raise Unsealable("not reasoning content")
    return content
