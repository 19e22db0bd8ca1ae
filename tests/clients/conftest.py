"""The clients run as a tenant of their own: what they leave behind (Codex's store=false
responses, purged a moment later) is no other test's business."""

from __future__ import annotations

import pytest

from tests.helpers import new_key, new_tenant


@pytest.fixture
def client_key(stack, db_access) -> str:
    return new_key(new_tenant("client"))
