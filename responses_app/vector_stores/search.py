"""Search over vector stores: the chunks that share the queries' words, from the database's
lexical index (index.py), and, for stores with an embedding model, the chunks nearest to the
queries' meaning (vectors.py); every candidate scored by both (BM25 with the searched
stores' own statistics, brought to 0..1 by the best score the query could reach; cosine
similarity), the two rankings fused by weighted reciprocal rank fusion.

The results come in the fused order. A result's score is its relevance, the weighted mean
of its two scores (with words only, its BM25 score): 0..1, the same on SQLite and
PostgreSQL, and what ``score_threshold`` compares (a rank says nothing of how well a chunk
matches: every query has a first)."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from django.db.models import Sum

from responses_app.models import VectorStore, VectorStoreChunk, VectorStoreFile, VectorStoreFileStatus, VectorStoreTerm
from responses_app.vector_stores import index, vectors
from responses_app.vector_stores.analysis import store_token, terms
from responses_app.vector_stores.filters import matches
from responses_app.wire.search_options import Filter, Ranking

K1 = 1.2  # BM25's term frequency saturation
B = 0.75  # and its length normalization, at their usual values
CANDIDATES = 200  # chunks taken from each ranking per search
COMMON_SHARE = 0.05  # a term in more of the chunks than this (and than COMMON_CHUNKS) finds no candidates
COMMON_CHUNKS = 2000
RRF_K = 60  # reciprocal rank fusion's constant, as in its paper (Cormack et al., 2009)


@dataclass(frozen=True)
class SearchResult:
    vector_store_file: VectorStoreFile  # its ``file`` loaded
    text: str
    score: float


def search(stores: Sequence[VectorStore], queries: Sequence[str], filter_: Filter | None, max_num_results: int,
           ranking: Ranking = Ranking()) -> list[SearchResult]:
    """The best chunks for the queries, in the fused order: at most ``max_num_results``, each
    scoring at least ``ranking.score_threshold``."""
    if not sum(store.chunk_count for store in stores):
        return []
    file_ids = None if filter_ is None else _matching_files([store.pk for store in stores], filter_)
    bm25 = _Bm25.of(stores, queries) if ranking.text_weight else None
    semantic = dict(vectors.nearest(stores, queries, file_ids, CANDIDATES)) if ranking.embedding_weight else {}
    # The word score of every candidate, those found by meaning too.
    lexical = {} if bm25 is None else {
        pk: bm25.score(chunk_terms, term_count)
        for pk, chunk_terms, term_count in VectorStoreChunk.objects.filter(
            pk__in=[*bm25.candidates(stores, file_ids), *semantic]).values_list("pk", "terms", "term_count")}
    if semantic:
        order = _fused(_ranked(lexical), _ranked(semantic), ranking)
        total = ranking.text_weight + ranking.embedding_weight
        scores = {pk: (ranking.text_weight * lexical.get(pk, 0.0) + ranking.embedding_weight
                       * max(semantic.get(pk, 0.0), 0.0)) / total for pk in order}
    else:
        order, scores = _ranked(lexical), lexical
    best = [pk for pk in order if scores[pk] >= ranking.score_threshold and scores[pk] > 0][:max_num_results]
    chunks = VectorStoreChunk.objects.select_related("vector_store_file__file").in_bulk(best)
    return [SearchResult(chunks[pk].vector_store_file, chunks[pk].text, scores[pk]) for pk in best if pk in chunks]


@dataclass(frozen=True)
class _Bm25:
    """BM25 for a search's query terms, with the searched stores' statistics."""

    idf: dict[str, float]
    frequencies: dict[str, int]  # chunks holding each term
    chunk_total: int
    average_length: float
    best: float  # every term, as often as saturation allows

    @classmethod
    def of(cls, stores: Sequence[VectorStore], queries: Sequence[str]) -> _Bm25 | None:
        """None when no term of the queries is in the stores."""
        query_terms = list(dict.fromkeys(term for query in queries for term in terms(query)))
        if not query_terms:
            return None
        chunk_total = sum(store.chunk_count for store in stores)
        frequencies = dict(VectorStoreTerm.objects.filter(vector_store_id__in=[store.pk for store in stores],
                                                          term__in=query_terms)
                           .values_list("term").annotate(Sum("chunks")))
        idf = {term: math.log(1 + (chunk_total - held + 0.5) / (held + 0.5))
               for term, held in frequencies.items() if held > 0}
        average_length = sum(store.term_count for store in stores) / chunk_total
        return cls(idf, frequencies, chunk_total, average_length, sum(idf.values()) * (K1 + 1)) if idf else None

    def candidates(self, stores: Sequence[VectorStore], file_ids: list[int] | None) -> list[int]:
        """Up to CANDIDATES chunks that hold the query's selective terms."""
        return index.candidates([store_token(store.pk) for store in stores],
                                _selective(self.idf, self.frequencies, self.chunk_total), file_ids, CANDIDATES)

    def score(self, chunk_terms: str, term_count: int) -> float:
        """0..1: the chunk's BM25 over the best the query could reach."""
        # Each term between two spaces of its own, so that str.count (in C) counts every
        # occurrence: a few calls instead of a Python loop over the chunk's words.
        spaced = f" {chunk_terms.replace(' ', '  ')} "
        norm = K1 * (1 - B + B * term_count / self.average_length)
        score = 0.0
        for term, idf in self.idf.items():
            if count := spaced.count(f" {term} "):
                score += idf * count * (K1 + 1) / (count + norm)
        return score / self.best


def _ranked(scores: dict[int, float]) -> list[int]:
    """The chunks that score above 0, best first."""
    return sorted((pk for pk, score in scores.items() if score > 0), key=lambda pk: -scores[pk])


def _fused(lexical: list[int], semantic: list[int], ranking: Ranking) -> list[int]:
    """Weighted reciprocal rank fusion of the two rankings."""
    fused: defaultdict[int, float] = defaultdict(float)  # not a Counter: its counts are ints
    for weight, ranked in ((ranking.text_weight, lexical), (ranking.embedding_weight, semantic)):
        for rank, pk in enumerate(ranked, start=1):
            fused[pk] += weight / (RRF_K + rank)
    return sorted(fused, key=fused.__getitem__, reverse=True)  # as Counter.most_common: ties keep their order


def _selective(idf: dict[str, float], frequencies: dict[str, int], chunk_total: int) -> dict[str, float]:
    """The terms that find the candidates: those in at most COMMON_SHARE of the chunks, or
    in fewer than COMMON_CHUNKS (a common word would make nearly every chunk of a big store a
    candidate, and adds little to a score); the rarest two when every term is common. Every
    term still scores the candidates."""
    most = max(COMMON_SHARE * chunk_total, COMMON_CHUNKS)
    selective = {term: value for term, value in idf.items() if frequencies[term] <= most}
    return selective or dict(sorted(idf.items(), key=lambda pair: -pair[1])[:2])


def _matching_files(store_ids: list[str], filter_: Filter) -> list[int]:
    # A store's files are few next to its chunks: the filter is applied to them here, once,
    # and the index query keeps only their chunks.
    files = VectorStoreFile.objects.filter(vector_store_id__in=store_ids, status=VectorStoreFileStatus.COMPLETED)
    return [pk for pk, attributes in files.values_list("pk", "attributes") if matches(filter_, attributes)]
