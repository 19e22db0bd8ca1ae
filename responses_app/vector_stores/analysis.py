"""Text into index terms, the same way for a chunk and for a query: words (Unicode letters
and digits), lower-cased, English stop words dropped, each stemmed (Snowball), so that
"configuring" finds "configuration"."""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import snowballstemmer

WORD = re.compile(r"[^\W_]+")
MAX_TERM = 64  # a longer "word" (a hash, base64) is never what a reader searches for
STOP_WORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being below between both
but by can could did do does doing down during each few for from further had has have having he her here hers
herself him himself his how i if in into is it its itself just me more most my myself no nor not of off on once
only or other our ours ourselves out over own same she should so some such than that the their theirs them
themselves then there these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves
""".split())
# A Snowball stemmer keeps the word it is stemming in the instance: one per thread (a
# worker's threads pool ingests several files at once, Daphne's threads search).
_local = threading.local()


def terms(text: str) -> list[str]:
    """The text's index terms, in order, repeated as often as they occur."""
    return [_stem(word) for word in WORD.findall(text.lower()) if word not in STOP_WORDS and len(word) <= MAX_TERM]


def store_token(vector_store_id: str) -> str:
    """The token that leads every chunk's terms of a store: letters and digits only, so that
    every index's tokenizer keeps it whole, and never a stem of a word."""
    return "vs" + vector_store_id.removeprefix("vs_")


@lru_cache(maxsize=200_000)
def _stem(word: str) -> str:
    # Snowball is pure Python; a document's words repeat, so the cache does most of the work.
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = snowballstemmer.stemmer("english")
    return stemmer.stemWord(word)
