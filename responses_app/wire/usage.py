"""The tokens one response used (its Response object's ``usage``). A tenant's daily totals
are responses_app/tenancy/daily_usage.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass
class Usage:
    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0
    reasoning_tokens: int = 0
    # Not on the wire: the last engine call's prompt and output, which the engine's prefix
    # cache holds for the next turn (dispatch prefers the node that ran it: dispatch/fleet.py).
    held_tokens: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "input_tokens": self.input_tokens,
            # cache_write_tokens: vLLM's prefix cache has no separate write accounting.
            "input_tokens_details": {"cached_tokens": self.cached_tokens, "cache_write_tokens": 0},
            "output_tokens": self.output_tokens,
            "output_tokens_details": {"reasoning_tokens": self.reasoning_tokens},
            "total_tokens": self.input_tokens + self.output_tokens,
        }
