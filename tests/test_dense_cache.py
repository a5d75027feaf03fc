"""The in-memory dense copy against sqlite-vec on the same rows.

Both answer "the k nearest chunks in these scopes (of these kinds)"; the copy must give the
same memories in the same order with the same cosine distances, and must stay current with
writes made through another connection to the file (another process), reloading when the
journal it would need has been trimmed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pytest

from memproc.retrieval.dense_cache import DenseCache
from memproc.store import NewMemory, Store
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.store.vectors import EmbedderRow, PendingMemory

DIMS = 16
SCOPES = ("alpha", "beta", "gamma")
KINDS = ("fact", "note", "episode")


def unit_vectors(rng: np.random.Generator, count: int) -> np.ndarray:
    vectors = rng.standard_normal((count, DIMS)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def new(scope: str, kind: str, content: str) -> NewMemory:
    return NewMemory(
        scope=scope,
        kind=kind,
        content=content,
        tags=[],
        metadata={},
        source={},
        importance=0.5,
        client_token=None,
    )


class Corpus:
    """Memories with 1-3 random unit vectors each, written through one Store."""

    def __init__(self, store: Store, seed: int = 7) -> None:
        self.store = store
        self.rng = np.random.default_rng(seed)
        with store.writing() as conn:
            self.embedder = vector_sql.register_embedder(conn, "test-embedder", "fp-1", DIMS)
        self.seqs: list[int] = []
        self._written = 0

    def add(self, count: int, store: Store | None = None) -> list[int]:
        seqs = []
        with (store or self.store).writing() as conn:
            for _ in range(count):
                self._written += 1
                scope = SCOPES[self.rng.integers(len(SCOPES))]
                kind = KINDS[self.rng.integers(len(KINDS))]
                _, seq = memory_sql.insert(conn, new(scope, kind, f"memory {self._written}"))
                chunks = int(self.rng.integers(1, 4))
                self._put(conn, seq, scope, kind, unit_vectors(self.rng, chunks))
                seqs.append(seq)
        self.seqs += seqs
        return seqs

    def replace(self, seq: int, store: Store) -> None:
        """New vectors for an existing memory (its content was re-embedded)."""
        with store.writing() as conn:
            scope, kind = conn.execute(
                "SELECT scope, kind FROM memories WHERE seq = ?", (seq,)
            ).fetchone()
            self._put(conn, seq, scope, kind, unit_vectors(self.rng, 2))

    def _put(self, conn: object, seq: int, scope: str, kind: str, vectors: np.ndarray) -> None:
        content = f"memory at seq {seq}"
        pending = PendingMemory(seq, scope, kind, content, memory_sql.content_hash(content))
        vector_sql.put_vectors(conn, self.embedder, pending, [v.tobytes() for v in vectors])  # type: ignore[arg-type]

    def query(self) -> np.ndarray:
        return unit_vectors(self.rng, 1)[0]


@pytest.fixture
def corpus(store: Store) -> Corpus:
    return Corpus(store)


@pytest.fixture
def other_store(db_path: str) -> Iterator[Store]:
    """A second Store on the same file: its writes are another process's writes."""
    opened = Store(db_path)
    try:
        yield opened
    finally:
        opened.close()


FILTERS: list[tuple[Sequence[str], Sequence[str] | None]] = [
    (["alpha"], None),
    (["alpha", "beta"], None),
    (list(SCOPES), None),
    (["beta"], ["fact"]),
    (["alpha", "gamma"], ["note", "episode"]),
    (list(SCOPES), ["episode"]),
    (["no-such-scope"], None),
    (["alpha"], ["no-such-kind"]),
]


def assert_same_as_sqlite_vec(
    store: Store, cache: DenseCache, query: np.ndarray, k: int = 12
) -> None:
    with store.reading() as conn:
        assert cache.refresh(conn)
        for scopes, kinds in FILTERS:
            expected = vector_sql.nearest(
                conn, cache.embedder, query.tobytes(), scopes=scopes, kinds=kinds, k=k
            )[:k]  # sqlite-vec answers k per scope; the overall k nearest are the first k
            got = cache.nearest(query, scopes, kinds, k)
            where = f"scopes={scopes} kinds={kinds}"
            assert [seq for seq, _ in got] == [seq for seq, _ in expected], where
            np.testing.assert_allclose(
                [d for _, d in got], [d for _, d in expected], atol=1e-5, err_msg=where
            )


def loaded_cache(store: Store, embedder: EmbedderRow) -> DenseCache:
    cache = DenseCache(embedder)
    assert not cache.loaded
    with store.reading() as conn:
        cache.load(conn)
    assert cache.loaded
    return cache


def test_nearest_matches_sqlite_vec_across_scopes_and_kinds(store: Store, corpus: Corpus) -> None:
    corpus.add(120)
    cache = loaded_cache(store, corpus.embedder)
    for _ in range(5):
        assert_same_as_sqlite_vec(store, cache, corpus.query())


def test_k_larger_than_the_rows_returns_every_row_in_order(store: Store, corpus: Corpus) -> None:
    corpus.add(6)
    cache = loaded_cache(store, corpus.embedder)
    query = corpus.query()
    with store.reading() as conn:
        total = conn.execute("SELECT count(*) FROM vector_rows").get
    got = cache.nearest(query, list(SCOPES), None, k=500)
    assert len(got) == total
    distances = [d for _, d in got]
    assert distances == sorted(distances)
    assert_same_as_sqlite_vec(store, cache, query, k=500)


def test_an_empty_index_finds_nothing(store: Store, corpus: Corpus) -> None:
    cache = loaded_cache(store, corpus.embedder)
    assert cache.nearest(corpus.query(), list(SCOPES), None, 10) == []


def test_refresh_grows_the_copy_beyond_what_it_was_loaded_with(
    store: Store, corpus: Corpus
) -> None:
    """A small load, then far more rows than any initial allocation (about 1,400 chunks)
    arriving through the journal: the arrays grow and keep every row."""
    corpus.add(10)
    cache = loaded_cache(store, corpus.embedder)
    corpus.add(700)
    assert_same_as_sqlite_vec(store, cache, corpus.query())
    with store.reading() as conn:
        total = conn.execute("SELECT count(*) FROM vector_rows").get
    assert len(cache.nearest(corpus.query(), list(SCOPES), None, k=10_000)) == total
    reloaded = loaded_cache(store, corpus.embedder)
    assert_same_as_sqlite_vec(store, reloaded, corpus.query())


def test_a_load_over_the_row_cap_leaves_the_copy_unloaded(store: Store, corpus: Corpus) -> None:
    corpus.add(20)
    with store.reading() as conn:
        rows = int(conn.execute("SELECT count(*) FROM vector_rows").get)
        cache = DenseCache(corpus.embedder)
        assert cache.load(conn, max_rows=rows - 1) is False
        assert not cache.loaded
        assert cache.load(conn, max_rows=rows) is True
    assert cache.loaded
    assert_same_as_sqlite_vec(store, cache, corpus.query())


def test_refresh_picks_up_another_connections_adds_and_deletes(
    store: Store, other_store: Store, corpus: Corpus
) -> None:
    corpus.add(40)
    cache = loaded_cache(store, corpus.embedder)
    query = corpus.query()
    assert_same_as_sqlite_vec(store, cache, query)

    added = corpus.add(15, store=other_store)
    forgotten, removed, replaced = corpus.seqs[0], corpus.seqs[1], corpus.seqs[2]
    with other_store.writing() as conn:
        memory_sql.set_status(conn, forgotten, "forgotten", None)  # drops its vectors
        vector_sql.remove_memory_vectors(conn, corpus.embedder, removed)
    corpus.replace(replaced, other_store)
    with store.reading() as conn:
        assert cache.refresh(conn)
    every = cache.nearest(query, list(SCOPES), None, k=10_000)
    seen = {seq for seq, _ in every}
    assert set(added) <= seen
    assert forgotten not in seen and removed not in seen
    assert sum(seq == replaced for seq, _ in every) == 2  # only the two new chunks
    assert_same_as_sqlite_vec(store, cache, query)


def test_a_row_added_and_removed_between_refreshes_is_not_resurrected(
    store: Store, other_store: Store, corpus: Corpus
) -> None:
    corpus.add(10)
    cache = loaded_cache(store, corpus.embedder)
    (fleeting,) = corpus.add(1, store=other_store)
    corpus.replace(fleeting, other_store)
    with other_store.writing() as conn:
        vector_sql.remove_memory_vectors(conn, corpus.embedder, fleeting)
    with store.reading() as conn:
        assert cache.refresh(conn)
    assert fleeting not in {seq for seq, _ in cache.nearest(corpus.query(), SCOPES, None, 1000)}
    assert_same_as_sqlite_vec(store, cache, corpus.query())


def test_refresh_without_changes_keeps_answering_the_same(store: Store, corpus: Corpus) -> None:
    corpus.add(30)
    cache = loaded_cache(store, corpus.embedder)
    query = corpus.query()
    before = cache.nearest(query, list(SCOPES), None, 20)
    with store.reading() as conn:
        assert cache.refresh(conn)
    assert cache.nearest(query, list(SCOPES), None, 20) == before


def test_a_trimmed_journal_forces_a_reload(
    store: Store, other_store: Store, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_sql, "JOURNAL_KEEP", 6)
    monkeypatch.setattr(vector_sql, "JOURNAL_TRIM_EVERY", 4)
    corpus.add(10)
    cache = loaded_cache(store, corpus.embedder)
    corpus.add(20, store=other_store)  # at least 20 journal entries: far more than are kept
    with store.reading() as conn:
        oldest, newest = vector_sql.journal_bounds(conn, corpus.embedder)
        assert newest - oldest < 10, "the journal was trimmed"
        assert cache.refresh(conn) is False
    assert not cache.loaded
    with store.reading() as conn:
        cache.load(conn)
    assert_same_as_sqlite_vec(store, cache, corpus.query())


def test_a_cache_only_a_little_behind_a_trimmed_journal_still_refreshes(
    store: Store, other_store: Store, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trimming keeps the newest entries, so a copy that is behind by fewer than are kept
    catches up from the journal instead of reloading."""
    monkeypatch.setattr(vector_sql, "JOURNAL_KEEP", 50)
    monkeypatch.setattr(vector_sql, "JOURNAL_TRIM_EVERY", 4)
    corpus.add(40)
    cache = loaded_cache(store, corpus.embedder)
    corpus.add(2, store=other_store)
    with store.reading() as conn:
        oldest, _ = vector_sql.journal_bounds(conn, corpus.embedder)
        assert oldest > 1, "older entries were trimmed"
        assert cache.refresh(conn) is True
    assert cache.loaded
    assert_same_as_sqlite_vec(store, cache, corpus.query())


def test_a_journal_trimmed_empty_by_another_embedders_writes_forces_a_reload(
    store: Store, other_store: Store, corpus: Corpus, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Trimming is by journal id across embedders: another embedder's writes (a second model
    backfilling the same file) can trim every entry of this one, including changes the copy
    has not applied yet. No entries left must not read as "nothing new"."""
    monkeypatch.setattr(vector_sql, "JOURNAL_KEEP", 6)
    monkeypatch.setattr(vector_sql, "JOURNAL_TRIM_EVERY", 4)
    corpus.add(10)
    cache = loaded_cache(store, corpus.embedder)
    added = corpus.add(3, store=other_store)  # changes the copy has not seen yet
    with other_store.writing() as conn:
        second = vector_sql.register_embedder(conn, "second-model", "fp-2", DIMS)
        for seq in corpus.seqs[:10]:
            content = f"memory at seq {seq}"
            pending = PendingMemory(seq, "alpha", "note", content, "x")
            vector_sql.put_vectors(conn, second, pending, [corpus.query().tobytes()])
    with store.reading() as conn:
        assert vector_sql.journal_bounds(conn, corpus.embedder) == (0, 0), "all trimmed"
        if cache.refresh(conn):
            seen = {seq for seq, _ in cache.nearest(corpus.query(), SCOPES, None, 10_000)}
            assert set(added) <= seen, "the copy claims to be current but misses new rows"
        else:
            assert not cache.loaded
            cache.load(conn)
    assert_same_as_sqlite_vec(store, cache, corpus.query())
