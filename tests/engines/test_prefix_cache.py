"""The echo engine's prefix cache and prefill clock (engines/prefix_cache.py): hits in whole
blocks as vLLM counts them, per salt, least recently used out first, and a prefill that
costs the uncached tokens, one engine's prefills in turn."""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

from responses_app.engines.echo import EchoEngine
from responses_app.engines.prefix_cache import BLOCK_TOKENS, PrefillClock, PrefixCache, block_hashes
from tests.engines.test_echo import STOPS, collect, output_text, prompt, user

ALICE = replace(STOPS, cache_salt="tenant:alice")
BOB = replace(STOPS, cache_salt="tenant:bob")


def test_a_prompt_seen_before_is_cached_in_whole_blocks_but_its_last_token():
    cache = PrefixCache(capacity_tokens=10_000)
    tokens = list(range(100))
    assert cache.admit(tokens, "a") == 0
    assert cache.admit(tokens, "a") == 96  # 6 whole blocks; the 7th would hold the last token
    assert cache.admit(list(range(97)), "a") == 96  # the 97th token starts a block of its own
    assert cache.admit(list(range(96)), "a") == 80  # the last token is in the 6th block: 5 are hits


def test_only_the_same_leading_blocks_are_hits():
    cache = PrefixCache(capacity_tokens=10_000)
    cache.admit(list(range(64)), "a")
    changed = list(range(64))
    changed[20] = -1  # the second block differs: the third and fourth are not hits either
    assert cache.admit([*changed, 0], "a") == BLOCK_TOKENS
    assert cache.admit([*range(40), 7, 7, 7], "a") == 32


def test_a_salt_sees_only_its_own_blocks():
    cache = PrefixCache(capacity_tokens=10_000)
    cache.admit(list(range(100)), "tenant:alice")
    assert cache.admit(list(range(100)), "tenant:bob") == 0
    assert cache.admit(list(range(100)), "tenant:alice") == 96


def test_the_least_recently_used_blocks_leave_first_at_capacity():
    cache = PrefixCache(capacity_tokens=4 * BLOCK_TOKENS)
    first, second = list(range(33)), list(range(1000, 1033))  # two blocks each, and a token
    cache.admit(first, "a")
    cache.admit(second, "a")
    assert cache.admit(first, "a") == 32  # a hit makes its blocks the most recently used
    cache.admit(list(range(2000, 2033)), "a")  # two more blocks: second's go
    assert len(cache) == 4
    assert cache.admit(first, "a") == 32
    assert cache.admit(second, "a") == 0


def test_no_capacity_holds_nothing():
    cache = PrefixCache(capacity_tokens=0)
    cache.admit(list(range(100)), "a")
    assert cache.admit(list(range(100)), "a") == 0 and len(cache) == 0


def test_prefills_take_their_turns_at_the_rate():
    clock = PrefillClock(tokens_per_s=1000)
    assert abs(clock.book(500) - 0.5) < 0.01
    assert abs(clock.book(500) - 1.0) < 0.01  # after the first one
    assert clock.book(0) == 0.0
    assert PrefillClock(tokens_per_s=0).book(10**6) == 0.0


def test_the_echo_engine_reports_the_hits_of_the_turn_before_with_its_output():
    engine = EchoEngine(prefix_cache_tokens=100_000)
    history = [user("Hello there")]
    first = collect(engine, prompt(*history), ALICE)
    assert first[0].cached_tokens == 0
    # The next turn's prompt holds the first one's and its answer (its final message).
    history += [{"role": "assistant", "content": output_text(first).split("<|message|>")[-1].removesuffix(
        "<|return|>")}, user("And again")]
    second_prompt = prompt(*history)
    second = collect(engine, second_prompt, ALICE)
    # The first prompt is the second's prefix: its whole blocks are hits.
    assert len(prompt(user("Hello there"))) - BLOCK_TOKENS < second[0].cached_tokens < len(second_prompt)
    assert second[0].cached_tokens % BLOCK_TOKENS == 0
    assert collect(engine, second_prompt, BOB)[0].cached_tokens == 0  # another tenant's salt


def test_the_first_token_waits_for_the_uncached_prompt_only():
    engine = EchoEngine(prefix_cache_tokens=100_000, prefill_tokens_per_s=2000)
    prompt_ids = prompt(user("Hello there " * 100))  # a few hundred tokens: a fraction of a second

    def first_token_s() -> tuple[float, int]:
        async def run() -> tuple[float, int]:
            started = time.monotonic()
            async for chunk in engine.generate(prompt_ids, ALICE, "r"):
                return time.monotonic() - started, chunk.cached_tokens or 0
            raise AssertionError("no output")

        return asyncio.run(run())

    cold, cached = first_token_s()
    assert cached == 0 and cold >= len(prompt_ids) / 2000 * 0.9
    warm, cached = first_token_s()
    assert cached >= len(prompt_ids) - BLOCK_TOKENS and warm < cold / 4


def test_a_chain_goes_on_from_the_hashes_known_as_if_hashed_whole():
    prompt, output = list(range(50)), list(range(900, 940))
    known = block_hashes(prompt, "a")
    assert len(known) == 3  # the prompt's last 2 tokens start the 4th block, with the output's
    assert block_hashes(prompt + output, "a", known) == block_hashes(prompt + output, "a")
    assert block_hashes(prompt + output, "b", block_hashes(prompt, "b")) != block_hashes(prompt + output, "a")
