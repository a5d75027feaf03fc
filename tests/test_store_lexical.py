"""The lexical channel ranks and scores alike on both stores: PostgreSQL's BM25 over tsvector
(store/postgres/lexical.py) is FTS5's bm25() with the same tokens, weights and statistics, so
a search's explain output means the same whichever store served it."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from memproc.store import NewMemory, Store
from memproc.store import memories as memory_sql
from memproc.store.postgres.database import PgStore
from memproc.store.quoting import fts_match_any

CORPUS = [
    ("the deploy pipeline builds the container image and pushes it", ["ci"], None),
    ("postgres connection pool size raised to forty for the api", ["db", "api"], None),
    ("the api gateway times out after thirty seconds", [], "we talked about the gateway"),
    ("container images are scanned before the deploy", ["security"], None),
    ("café menu: crème brûlée and naïve espresso", [], None),
    ("deploy deploy deploy: the word repeated in one memory", [], None),
    ("a long memory " + "filler words " * 40 + "that mentions the pipeline once", [], None),
]
QUERIES = [
    "deploy pipeline",
    "container image",
    "api gateway timeout",
    "creme brulee",
    "pool size",
    "gateway",
    "nothing matches zzyzx",
]


def _fill(store: Store | PgStore, new_memory: Callable[..., NewMemory]) -> dict[int, str]:
    ids = {}
    with store.writing() as conn:
        for content, tags, context in CORPUS:
            memory_id, seq = memory_sql.insert(
                conn, new_memory(content, tags=tags, context=context)
            )
            ids[seq] = memory_id
    return ids


def _search(store: Store | PgStore, query: str) -> list[tuple[str, float]]:
    match = fts_match_any(query)
    assert match is not None
    with store.reading() as conn:
        rows = memory_sql.search_lexical(conn, match, scopes=["proj"], kinds=None, limit=10)
    return [(row.record.id, float(row.bm25)) for row in rows]


@pytest.mark.parametrize("query", QUERIES)
def test_postgres_ranks_and_scores_as_fts5(
    query: str, store: Store, pg_store: PgStore, new_memory: Callable[..., NewMemory]
) -> None:
    sqlite_ids = _fill(store, new_memory)
    pg_ids = _fill(pg_store, new_memory)
    same = {pg_ids[seq]: memory_id for seq, memory_id in sqlite_ids.items()}  # same seqs
    fts5 = _search(store, query)
    ours = [(same[memory_id], score) for memory_id, score in _search(pg_store, query)]
    assert [memory_id for memory_id, _ in ours] == [memory_id for memory_id, _ in fts5]
    for (_, expected), (_, got) in zip(fts5, ours, strict=True):
        assert got == pytest.approx(expected, rel=1e-6)


def test_document_frequencies_agree(
    store: Store, pg_store: PgStore, new_memory: Callable[..., NewMemory]
) -> None:
    """The idf the lexical feedback channel weighs terms by is the same on both stores."""
    terms = ["deploy", "containers", "gateway", "creme", "zzyzx", "we"]
    found = []
    for each in (store, pg_store):
        _fill(each, new_memory)
        with each.reading() as conn:
            found.append(memory_sql.document_frequencies(conn, terms))
    assert found[0] == found[1]
    assert found[0][1]["deploy"] == 3 and found[0][1]["zzyzx"] == 0


def test_the_ranking_read_first_and_the_full_filter_agree_with_fts5(
    store: Store, pg_store: PgStore, new_memory: Callable[..., NewMemory]
) -> None:
    """A scope whose matches all rank below 200 of another scope's: the ranking read alone
    holds none of them, so every match is filtered; the other scope's come from the ranking
    alone. Both stores return the same rows with the same scores."""
    found = []
    for each in (store, pg_store):
        with each.writing() as conn:
            for number in range(230):
                memory_sql.insert(conn, new_memory(f"alpha alpha alpha note {number}", scope="big"))
            for number in range(6):
                memory_sql.insert(conn, new_memory(f"alpha and more words {number}", scope="small"))
        match = fts_match_any("alpha")
        assert match is not None
        with each.reading() as conn:
            found.append(
                [
                    [
                        (row.record.seq, round(float(row.bm25), 9))
                        for row in memory_sql.search_lexical(
                            conn, match, scopes=[scope], kinds=None, limit=5
                        )
                    ]
                    for scope in ("small", "big")
                ]
            )
    assert found[0] == found[1]
    assert [len(rows) for rows in found[0]] == [5, 5]
