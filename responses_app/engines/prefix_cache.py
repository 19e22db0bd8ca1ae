"""vLLM's automatic prefix caching as the echo engine plays it, so that what a prefix hit
saves (and where dispatch sends a turn) can be seen without a GPU.

A prompt is cut into full blocks of BLOCK_TOKENS; each block is named by a hash of the
blocks up to it and of the request's cache salt (its tenant), so a block is found only
after the same prefix of the same tenant. The blocks are kept least recently used first,
up to a capacity in tokens. As in vLLM, the prompt's last token is always computed: a
prompt held whole reports all its full blocks but the one with its last token.

The prefill clock stands for the GPU's prefill: each uncached prompt token costs
1/rate seconds, and the prefills of one engine take their turns, as they share a GPU.
"""

from __future__ import annotations

import hashlib
import time
from collections import OrderedDict

BLOCK_TOKENS = 16  # vLLM's default block size


def block_hashes(token_ids: list[int], salt: str | None, known: list[int] | None = None) -> list[int]:
    """The chained hash of each full block; ``known``, the hashes of its first blocks, are
    not computed again. Ints hash alike in every process (no PYTHONHASHSEED), so the salt
    is made an int once."""
    hashes = list(known or [])
    parent = hashes[-1] if hashes else int.from_bytes(
        hashlib.blake2b((salt or "").encode(), digest_size=8).digest(), "big")
    for start in range(len(hashes) * BLOCK_TOKENS, len(token_ids) - BLOCK_TOKENS + 1, BLOCK_TOKENS):
        parent = hash((parent, *token_ids[start : start + BLOCK_TOKENS]))
        hashes.append(parent)
    return hashes


class PrefixCache:
    """The blocks an engine holds; ``capacity_tokens`` 0 holds none."""

    def __init__(self, capacity_tokens: int) -> None:
        self.capacity_blocks = max(capacity_tokens, 0) // BLOCK_TOKENS
        self._blocks: OrderedDict[int, None] = OrderedDict()

    def __len__(self) -> int:
        return len(self._blocks)

    def admit(self, prompt_token_ids: list[int], salt: str | None, hashes: list[int] | None = None) -> int:
        """The prompt's cached tokens; its blocks are then held (the most recently used).
        ``hashes``: its block hashes, where the caller has them."""
        hashes = block_hashes(prompt_token_ids, salt) if hashes is None else hashes
        # The last token is computed whatever the cache holds, so its block is no hit.
        usable = (len(prompt_token_ids) - 1) // BLOCK_TOKENS
        hits = 0
        for block in hashes[:usable]:
            if block not in self._blocks:
                break
            hits += 1
        self._hold(hashes)
        return hits * BLOCK_TOKENS

    def hold(self, token_ids: list[int], salt: str | None, known: list[int] | None = None) -> None:
        """Keep the full blocks of a prompt and its output (the next turn's prefix); ``known``:
        the hashes of its first blocks (the prompt's, from its admission)."""
        self._hold(block_hashes(token_ids, salt, known))

    def _hold(self, hashes: list[int]) -> None:
        if not self.capacity_blocks:
            return
        for block in hashes:
            self._blocks[block] = None
            self._blocks.move_to_end(block)
        while len(self._blocks) > self.capacity_blocks:
            self._blocks.popitem(last=False)


class PrefillClock:
    """When each prefill ends: one after another at ``tokens_per_s`` (0: no cost)."""

    def __init__(self, tokens_per_s: float) -> None:
        self.tokens_per_s = tokens_per_s
        self._free_at = 0.0  # time.monotonic() at which the last prefill queued ends

    def book(self, uncached_tokens: int) -> float:
        """Seconds from now until this prefill has run, after those booked before it."""
        if self.tokens_per_s <= 0 or uncached_tokens <= 0:
            return 0.0
        now = time.monotonic()
        self._free_at = max(self._free_at, now) + uncached_tokens / self.tokens_per_s
        return self._free_at - now

    def backlog_s(self) -> float:
        """Seconds until the prefills booked so far have run."""
        return max(0.0, self._free_at - time.monotonic())
