"""The lexical channel ranks and scores alike on both stores: PostgreSQL's BM25 over tsvector
(store/postgres/lexical.py) is FTS5's bm25() with the same tokens, weights and statistics, so
a search's explain output means the same whichever store served it."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import pytest

from memproc.store import NewMemory, Store
from memproc.store import memories as memory_sql
from memproc.store.postgres import lexical
from memproc.store.postgres.connection import PgConnection
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


def _zipf_corpus(count: int, seed: int) -> tuple[list[str], list[str]]:
    """`count` texts of 8-30 words drawn from a made-up vocabulary by Zipf's law, as natural
    text's words are: a few words in most texts, most words in a few."""
    rng = random.Random(seed)
    words = [f"w{rank}x" for rank in range(1, 401)]
    weights = [1 / rank for rank in range(1, 401)]
    texts = [" ".join(rng.choices(words, weights, k=rng.randint(8, 30))) for _ in range(count)]
    return words, texts


def _head_and_full(conn: PgConnection, match: str, depth: int) -> tuple[bool, list[Any], list[Any]]:
    """The head ranking (whether it pruned, its best `depth`) and the full ranking's best
    `depth`, both ordered as a search orders them."""
    values = {**lexical.query_params(lexical.query_lexemes(conn, match)), "depth": depth}
    terms = lexical.query_terms_sql("memories")
    best = "SELECT seq, score FROM ranked ORDER BY score, seq LIMIT %(depth)s"
    pruned = conn.execute(
        f"WITH {terms}, {lexical.head_sql('memories')} SELECT ok FROM pruned", values
    ).fetchone()[0]
    head = conn.execute(f"WITH {terms}, {lexical.head_sql('memories')} {best}", values)
    full = conn.execute(f"WITH {terms}, {lexical.ranked_sql('memories')} {best}", values)
    return bool(pruned), head.fetchall(), full.fetchall()


def test_the_head_of_a_broad_query_is_the_full_rankings_head(
    pg_store: PgStore, new_memory: Callable[..., NewMemory]
) -> None:
    """The pruned ranking (MaxScore over the query's commonest terms) yields the same best
    rows, with the same scores, as the ranking over every posting, at every depth; and it
    does prune, for queries that mix common and rare words."""
    words, texts = _zipf_corpus(600, seed=3)
    with pg_store.writing() as conn:
        for text in texts:
            memory_sql.insert(conn, new_memory(text))
    rng = random.Random(8)
    pruned_count = 0
    with pg_store.reading() as conn:
        for _ in range(30):
            query = " ".join(rng.sample(words[:5], 2) + rng.sample(words[5:200], 3))
            match = fts_match_any(query)
            assert match is not None
            for depth in (1, 7, 40):
                pruned, head, full = _head_and_full(conn, match, depth)
                pruned_count += pruned
                assert [seq for seq, _ in head] == [seq for seq, _ in full]
                assert [score for _, score in head] == pytest.approx(
                    [score for _, score in full], rel=1e-9
                )
    assert pruned_count >= 30  # of 90


def test_broad_queries_rank_and_score_as_fts5(
    store: Store, pg_store: PgStore, new_memory: Callable[..., NewMemory]
) -> None:
    """Over a corpus large enough for the ranking to be read first (and pruned), both
    stores return the same rows with the same scores."""
    words, texts = _zipf_corpus(700, seed=5)
    rng = random.Random(13)
    queries = [" ".join(rng.sample(words[:4], 2) + rng.sample(words[4:], 2)) for _ in range(12)]
    found = []
    for each in (store, pg_store):
        with each.writing() as conn:
            for text in texts:
                memory_sql.insert(conn, new_memory(text))
        with each.reading() as conn:
            found.append(
                [
                    [
                        (row.record.seq, float(row.bm25))
                        for row in memory_sql.search_lexical(
                            conn, fts_match_any(query) or "", scopes=["proj"], kinds=None, limit=10
                        )
                    ]
                    for query in queries
                ]
            )
    for sqlite_rows, pg_rows in zip(found[0], found[1], strict=True):
        assert len(sqlite_rows) == 10
        assert [seq for seq, _ in pg_rows] == [seq for seq, _ in sqlite_rows]
        assert [s for _, s in pg_rows] == pytest.approx([s for _, s in sqlite_rows], rel=1e-6)
