"""The lexical index of vector store chunks, in the database itself: SQLite's FTS5 on the
embedded default, PostgreSQL's full-text search over a stored tsvector in production
(migration 0016 makes both).
It only finds candidates, pre-ranked; search.py scores them (BM25 with the store's own
statistics), the same way on either database."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from django.db import connection

FTS_TABLE = "responses_app_vectorstorechunk_fts"  # SQLite
POOL = 2000  # chunks ranked by one PostgreSQL stage (_postgresql)
CHUNK_TABLE = "responses_app_vectorstorechunk"


def candidates(store_tokens: Sequence[str], idf: Mapping[str, float], file_ids: Sequence[int] | None,
               limit: int) -> list[int]:
    """Up to ``limit`` ids of chunks of those stores (and of those files, unless None) that
    hold any of the terms, the likeliest first."""
    if not idf or file_ids == []:
        return []
    if connection.vendor == "postgresql":
        return _postgresql(store_tokens, idf, file_ids, limit)
    return _sqlite(store_tokens, idf, file_ids, limit)


def _sqlite(store_tokens: Sequence[str], idf: Mapping[str, float], file_ids: Sequence[int] | None,
            limit: int) -> list[int]:
    # FTS5's own bm25() pre-ranks (its statistics span every store; search.py rescores).
    match = f"({' OR '.join(_quoted(token) for token in store_tokens)}) AND ({' OR '.join(map(_quoted, idf))})"
    sql = f"SELECT {FTS_TABLE}.rowid FROM {FTS_TABLE}"
    params: list[object] = [match]
    where = f"{FTS_TABLE} MATCH %s"
    if file_ids is not None:
        sql += f" JOIN {CHUNK_TABLE} c ON c.id = {FTS_TABLE}.rowid"
        where += f" AND c.vector_store_file_id IN ({', '.join(['%s'] * len(file_ids))})"
        params += file_ids
    sql += f" WHERE {where} ORDER BY bm25({FTS_TABLE}) LIMIT %s"
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, limit])
        return [row[0] for row in cursor.fetchall()]


def _postgresql(store_tokens: Sequence[str], idf: Mapping[str, float], file_ids: Sequence[int] | None,
                limit: int) -> list[int]:
    # ts_rank knows no rarity, and reading every matching chunk's tsvector to rank it costs
    # as much as the terms are common. So: first the chunks that hold every term (GIN
    # intersects the terms' lists), ranked by ts_rank; then, if too few, those that hold any
    # term, ranked by the rarity of the terms each holds. Each stage ranks at most POOL
    # chunks: past that, a query of common words takes any POOL of them.
    terms = list(idf)
    stores = f"({' | '.join(store_tokens)})"
    every = f"{stores} & {' & '.join(terms)}"
    found = _pg_stage(every, "ts_rank(terms_vector, to_tsquery('simple', %s))", [every], file_ids, [], limit)
    if len(found) < limit and len(terms) > 1:
        held = " + ".join(f"(CASE WHEN terms_vector @@ %s::tsquery THEN {float(idf[term])!r} ELSE 0 END)"
                          for term in terms)
        found += _pg_stage(f"{stores} & ({' | '.join(terms)})", held, terms, file_ids, found, limit - len(found))
    return found


def _pg_stage(query: str, rank: str, rank_params: Sequence[object], file_ids: Sequence[int] | None,
              seen: list[int], limit: int) -> list[int]:
    pool = (f"SELECT id, terms_vector FROM {CHUNK_TABLE} WHERE terms_vector @@ to_tsquery('simple', %s)"
            + (" AND vector_store_file_id = ANY(%s)" if file_ids is not None else "")
            + (" AND NOT id = ANY(%s)" if seen else "") + " LIMIT %s")
    params: list[object] = [query, *([list(file_ids)] if file_ids is not None else []),
                            *([seen] if seen else []), POOL, *rank_params, limit]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT id FROM ({pool}) AS pool ORDER BY {rank} DESC LIMIT %s", params)
        return [row[0] for row in cursor.fetchall()]


def _quoted(term: str) -> str:
    return f'"{term}"'

