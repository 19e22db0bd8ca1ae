"""A completion's ``stop`` sequences, applied to the text of the messages the model writes
(never to its reasoning, its tool calls or harmony's own tokens): the output ends before the
first sequence found, which is not part of it.

The text arrives in deltas, and a sequence may span two: the end of a delta that could be
the start of a sequence is held back until the next delta says whether it is. A delta's
logprobs (of the tokens that made it) go out with the last of its text; those of a delta cut
by the sequence go nowhere, as the tokens did not all make the answer.
"""

from __future__ import annotations

Logprobs = list[list[tuple[int, float]]]


class StopSequences:
    def __init__(self, sequences: tuple[str, ...]) -> None:
        self.sequences = sequences
        self.reached = False
        # The deltas not yet wholly let through, with their logprobs; ``shown``: how much of
        # the first one was.
        self._deltas: list[tuple[str, Logprobs]] = []
        self._shown = 0

    @property
    def held(self) -> str:
        return "".join(text for text, _ in self._deltas)[self._shown:]

    def feed(self, text: str, logprobs: Logprobs | None = None) -> tuple[str, Logprobs]:
        """What the client may see now of the text so far, and the logprobs of the deltas it
        completes. After a sequence is found, ``reached`` is true and the text is what came
        before it."""
        pending = self.held + text
        self._deltas.append((text, logprobs or []))
        found = [index for index in (pending.find(sequence) for sequence in self.sequences) if index >= 0]
        if found:
            self.reached = True
            shown, _ = self._let_through(min(found))
            self._deltas, self._shown = [], 0
            return shown, []
        return self._let_through(len(pending) - self._partial_sequence_at_end(pending))

    def flush(self) -> tuple[str, Logprobs]:
        """The held text and its logprobs, at the end of its message: no sequence came."""
        return self._let_through(len(self.held))

    def _let_through(self, count: int) -> tuple[str, Logprobs]:
        """The first ``count`` held characters, with the logprobs of the deltas they complete."""
        shown = self.held[:count]
        logprobs: Logprobs = []
        while count and self._deltas:
            text, delta_logprobs = self._deltas[0]
            left = len(text) - self._shown
            if count < left:
                self._shown += count
                break
            count -= left
            logprobs += delta_logprobs
            self._deltas.pop(0)
            self._shown = 0
        return shown, logprobs

    def _partial_sequence_at_end(self, text: str) -> int:
        """The length of the longest end of ``text`` that begins some sequence."""
        longest = 0
        for sequence in self.sequences:
            for length in range(min(len(sequence) - 1, len(text)), longest, -1):
                if sequence.startswith(text[len(text) - length:]):
                    longest = length
                    break
        return longest
