"""A response's output tokens as the worker counts them: what ``max_output_tokens``
bounds, and what its usage reports."""

from __future__ import annotations

from dataclasses import dataclass, field

from responses_app.harmony.parser import OutputParser
from responses_app.wire.usage import Usage


@dataclass
class TokenAccount:
    budget: int | None  # max_output_tokens
    parsers: list[OutputParser] = field(default_factory=list)  # one per engine turn
    summary_tokens: int = 0  # the output of the reasoning summaries' side calls
    compaction_tokens: int = 0  # a compaction's (not charged to max_output_tokens)
    # A continued response: the output (and reasoning) tokens its lost worker generated.
    prior_output_tokens: int = 0
    prior_reasoning_tokens: int = 0
    # Its first message's "<|start|>assistant", counted as output by the lost worker's
    # count (harmony/continuations.assistant_tokens): reasoning too if that message is.
    opened_tokens: int = 0

    def generated(self) -> int:
        """Output tokens so far, which max_output_tokens bounds (a compaction's are not)."""
        return sum(parser.output_tokens for parser in self.parsers) + self.summary_tokens + self.prior_output_tokens

    def remaining(self) -> int | None:
        """What is left of the budget (None: no budget)."""
        if self.budget is None:
            return None
        return max(self.budget - self.generated(), 0)

    def count(self, usage: Usage) -> None:
        """Write the output and reasoning tokens so far into ``usage``."""
        usage.output_tokens = self.generated() + self.compaction_tokens
        usage.reasoning_tokens = sum(parser.reasoning_tokens for parser in self.parsers) + self.prior_reasoning_tokens
