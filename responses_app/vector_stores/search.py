"""Search over vector stores: candidates from the database's lexical index (index.py), each
scored by BM25 with the searched stores' own statistics and brought to 0..1 by the best score
the query could reach, so that ``score_threshold`` means the same on SQLite and PostgreSQL."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Sum

from responses_app.models import VectorStore, VectorStoreChunk, VectorStoreFile, VectorStoreFileStatus, VectorStoreTerm
from responses_app.validation.search_options import Filter
from responses_app.vector_stores import index
from responses_app.vector_stores.analysis import store_token, terms
from responses_app.vector_stores.filters import matches

K1 = 1.2  # BM25's term frequency saturation
B = 0.75  # and its length normalization, at their usual values
CANDIDATES = 200  # chunks scored per search
COMMON_SHARE = 0.05  # a term in more of the chunks than this (and than COMMON_CHUNKS) finds no candidates
COMMON_CHUNKS = 2000


@dataclass(frozen=True)
class SearchResult:
    vector_store_file: VectorStoreFile  # its ``file`` loaded
    text: str
    score: float


def search(stores: Sequence[VectorStore], queries: Sequence[str], filter_: Filter | None, max_num_results: int,
           score_threshold: float = 0.0) -> list[SearchResult]:
    """The best chunks for the queries (their terms together), best first: at most
    ``max_num_results``, each scoring at least ``score_threshold``."""
    query_terms = list(dict.fromkeys(term for query in queries for term in terms(query)))
    chunk_total = sum(store.chunk_count for store in stores)
    if not query_terms or not chunk_total:
        return []
    store_ids = [store.pk for store in stores]
    average_length = sum(store.term_count for store in stores) / chunk_total
    frequencies = dict(VectorStoreTerm.objects.filter(vector_store_id__in=store_ids, term__in=query_terms)
                       .values_list("term").annotate(Sum("chunks")))
    idf = {term: math.log(1 + (chunk_total - held + 0.5) / (held + 0.5))
           for term, held in frequencies.items() if held > 0}
    file_ids = None if filter_ is None else _matching_files(store_ids, filter_)
    found = index.candidates([store_token(pk) for pk in store_ids], _selective(idf, frequencies, chunk_total),
                             file_ids, CANDIDATES)
    best = sum(idf.values()) * (K1 + 1)
    results = []
    for chunk in VectorStoreChunk.objects.filter(pk__in=found).select_related("vector_store_file__file"):
        score = _bm25(chunk, idf, average_length) / best
        if score >= score_threshold:
            results.append(SearchResult(chunk.vector_store_file, chunk.text, score))
    results.sort(key=lambda result: -result.score)
    return results[:max_num_results]


def _selective(idf: dict[str, float], frequencies: dict[str, int], chunk_total: int) -> dict[str, float]:
    """The terms that find the candidates: those in at most COMMON_SHARE of the chunks, or
    in fewer than COMMON_CHUNKS (a common word would make nearly every chunk of a big store a
    candidate, and adds little to a score); the rarest two when every term is common. Every
    term still scores the candidates."""
    most = max(COMMON_SHARE * chunk_total, COMMON_CHUNKS)
    selective = {term: value for term, value in idf.items() if frequencies[term] <= most}
    return selective or dict(sorted(idf.items(), key=lambda pair: -pair[1])[:2])


def _bm25(chunk: VectorStoreChunk, idf: dict[str, float], average_length: float) -> float:
    held = Counter(term for term in chunk.terms.split() if term in idf)
    norm = K1 * (1 - B + B * chunk.term_count / average_length)
    return sum(idf[term] * count * (K1 + 1) / (count + norm) for term, count in held.items())


def _matching_files(store_ids: list[str], filter_: Filter) -> list[int]:
    # A store's files are few next to its chunks: the filter is applied to them here, once,
    # and the index query keeps only their chunks.
    files = VectorStoreFile.objects.filter(vector_store_id__in=store_ids, status=VectorStoreFileStatus.COMPLETED)
    return [pk for pk, attributes in files.values_list("pk", "attributes") if matches(filter_, attributes)]
