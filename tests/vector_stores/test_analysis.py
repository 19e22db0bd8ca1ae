"""Index terms: a chunk's and a query's words analyzed the same way, from any thread."""

from __future__ import annotations

import sys
import threading

import snowballstemmer

from responses_app.vector_stores.analysis import terms


def test_a_chunk_is_lower_cased_stemmed_and_without_stop_words():
    assert terms("The Configuring of ferries, and 2 HARBOURS") == ["configur", "ferri", "2", "harbour"]


def test_threads_analyzing_at_once_each_get_the_stems_one_thread_gets():
    # Ingestion runs on a worker's threads pool and searches on Daphne's threads: a Snowball
    # stemmer keeps its state in the instance, so one shared by threads stems wrongly or
    # raises IndexError. Distinct words, so that the stem cache does not hide a race.
    reference = snowballstemmer.stemmer("english")
    texts = [" ".join(f"configuring{t}x{n} nationalities{t}y{n} hopefully{t}z{n}" for n in range(1000))
             for t in range(8)]
    expected = [[reference.stemWord(word) for word in text.split()] for text in texts]
    results: list[list[str] | BaseException | None] = [None] * len(texts)

    def analyze(index: int) -> None:
        try:
            results[index] = terms(texts[index])
        except BaseException as error:  # noqa: BLE001 - reported below
            results[index] = error

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads as often as the interpreter allows
    try:
        threads = [threading.Thread(target=analyze, args=(n,)) for n in range(len(texts))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    assert results == expected
