"""A file's text cut into chunks of at most N tokens of gpt-oss's tokenizer (o200k), each
overlapping the one before by M tokens, as the file's chunking strategy says
(vector_stores/requests.py). A chunk is a slice of the original text's bytes, cut at the
tokens' offsets; a character that a token boundary splits is left out at the cut."""

from __future__ import annotations

from collections.abc import Iterator

from responses_app.harmony.encoding import ordinary_tokens


def chunks(text: str, max_tokens: int, overlap_tokens: int) -> Iterator[str]:
    """The text's chunks, in order; none for a text with no token, one for a short text."""
    data = text.encode()
    _, offsets = ordinary_tokens().encode_with_offsets(text)  # byte offsets
    step = max_tokens - overlap_tokens
    for first in range(0, max(len(offsets) - overlap_tokens, 1), step):
        window = offsets[first : first + max_tokens]
        if not window:
            return
        piece = data[window[0][0] : window[-1][1]].decode(errors="ignore").strip()
        if piece:
            yield piece


def token_count(text: str) -> int:
    return ordinary_tokens().count(text)
