"""The echo engine's prefix cache on the live stack (engines/prefix_cache.py): a chain's
next turn reports the prompt it shares with the turn before as cached tokens, and no tenant
is served from another tenant's prefix."""

from __future__ import annotations

import uuid

import openai
import pytest
from django.conf import settings

from responses_app.engines.prefix_cache import BLOCK_TOKENS
from responses_app.models import Response

pytestmark = pytest.mark.core


def cached(response) -> int:
    return response.usage.input_tokens_details.cached_tokens


def test_a_chains_next_turn_reports_the_prompt_it_shares_as_cached_tokens(carol: openai.OpenAI, db_access):
    first = carol.responses.create(model="echo", input=f"{uuid.uuid4()} Tell me about caches, at length.")
    second = carol.responses.create(model="echo", input="And again.", previous_response_id=first.id)
    assert cached(first) == 0  # a tenant of its own: nothing of it is held yet
    # The first turn's prompt is the second's prefix: all its whole blocks are hits.
    assert first.usage.input_tokens - BLOCK_TOKENS < cached(second) < second.usage.input_tokens
    assert cached(second) % BLOCK_TOKENS == 0
    # Each row names the node whose cache holds its prompt now (the console shows it).
    assert {row.node for row in Response.objects.filter(pk__in=[first.id, second.id])} == {settings.NODE_ID}


def test_no_tenant_is_served_from_another_tenants_prefix(alice: openai.OpenAI, carol: openai.OpenAI):
    text = f"{uuid.uuid4()} " + "a prompt that fills many blocks of the cache " * 20
    alice.responses.create(model="echo", input=text, max_output_tokens=16)
    again = alice.responses.create(model="echo", input=text, max_output_tokens=16)
    assert cached(again) >= again.usage.input_tokens - BLOCK_TOKENS
    theirs = carol.responses.create(model="echo", input=text, max_output_tokens=16)
    assert theirs.usage.input_tokens == again.usage.input_tokens and cached(theirs) == 0
