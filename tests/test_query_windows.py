"""The thread window in the dense channel, scored at search time (`thread_query_windows`).

Real SQLite files and the real MiniLM throughout. The window's score is checked against what
the model itself says about the turns (embedded here, outside the search path), and the
setting against the same store searched without it.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.windows import window_scores
from memproc.runtime import Runtime
from memproc.store import memories as memory_sql
from memproc.store import threads as thread_sql
from memproc.wire.messages import Explanation, ForgetParams, RememberParams, SearchResult
from searchkit import (
    DEADLINE_S,
    OpenRuntime,
    ctx_of,
    ids,
    loaded_dense_copy,
    remember,
    search,
    seq_of,
)

SCOPE = "proj"
# The reply says nothing about what it answers; the question before it does.
TURNS = [
    "Melanie: Did you go to the pottery workshop in Portland?",
    "Caroline: Yes! It was the best weekend of the year.",
    "Melanie: I am glad. How is your brother?",
    "Caroline: He is fine, thanks for asking.",
    "Melanie: My car broke down on the highway yesterday.",
    "Caroline: Oh no, did you call a tow truck?",
]
QUESTION = "Did Caroline enjoy the pottery class in Oregon?"
ON = {"thread_query_windows": True, "thread_window_before": 1, "thread_window_after": 1}


def talk(runtime: Runtime, thread: str | None = "chat") -> list[str]:
    """The turns, one remember each, a minute apart; their ids in order."""
    found = []
    for minute, content in enumerate(TURNS):
        params = RememberParams(
            scope=SCOPE,
            kind="episode",
            content=content,
            occurred_at=f"2024-05-08T10:{minute:02d}:00.000Z",
            thread=thread,
        )
        found.append(memory_ops.remember(ctx_of(runtime), params).id)
    assert runtime.vectors.caught_up(DEADLINE_S)
    return found


def dense(runtime: Runtime, query: str = QUESTION) -> dict[str, float]:
    """id -> dense similarity of every candidate the dense channel ranked."""
    result = search(runtime, query, mode="dense", limit=len(TURNS), explain=True)
    assert result.explanation is not None
    return {
        c.id: c.dense_similarity
        for c in result.explanation.candidates
        if c.dense_similarity is not None
    }


def embedded(runtime: Runtime, texts: list[str]) -> np.ndarray:
    model = runtime.models.get("embedder", 0.0)
    return np.asarray(model.embed_documents(texts))


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_reply_scores_as_its_window_in_the_dense_channel(
    open_runtime: OpenRuntime, request: pytest.FixtureRequest, backend: str
) -> None:
    rt = open_runtime(request.getfixturevalue("pg_url") if backend == "postgres" else None, **ON)
    turns = talk(rt)
    model = rt.models.get("embedder", 0.0)
    query = np.asarray(model.embed_queries([QUESTION])[0])
    vectors = embedded(rt, TURNS[:3])  # the reply's window: the turn before, itself, after
    total = vectors.sum(axis=0)
    window = float(total @ query / np.linalg.norm(total))
    own = float(vectors[1] @ query)
    assert window > own  # what the window adds: the question's words are before the reply
    scores = dense(rt)
    assert scores[turns[1]] == pytest.approx(window, abs=1e-4)


def test_without_the_setting_the_reply_scores_as_itself(open_runtime: OpenRuntime) -> None:
    rt = open_runtime(**(ON | {"thread_query_windows": False}))
    turns = talk(rt)
    model = rt.models.get("embedder", 0.0)
    query = np.asarray(model.embed_queries([QUESTION])[0])
    own = float(embedded(rt, [TURNS[1]])[0] @ query)
    assert dense(rt)[turns[1]] == pytest.approx(own, abs=1e-4)


# Unthreaded, and nearer the question than the reply alone is, though it does not answer it.
DISTRACTOR = "Caroline: I did enjoy the cooking lesson."


def test_the_window_lifts_the_reply_above_a_nearer_stranger(open_runtime: OpenRuntime) -> None:
    on, off = open_runtime(**ON), open_runtime(**(ON | {"thread_query_windows": False}))
    ranked = {}
    for name, runtime in (("on", on), ("off", off)):
        reply = talk(runtime)[1]
        stranger = remember(runtime, DISTRACTOR, kind="episode")
        assert runtime.vectors.caught_up(DEADLINE_S)
        found = ids(search(runtime, QUESTION, mode="dense", limit=len(TURNS) + 1))
        ranked[name] = found.index(reply) < found.index(stranger)
    assert ranked == {"on": True, "off": False}


def test_explain_names_the_window_when_it_scored_best(open_runtime: OpenRuntime) -> None:
    rt = open_runtime(**ON)
    turns = talk(rt)
    result = search(rt, QUESTION, mode="dense", explain=True)
    assert result.explanation is not None
    assert result.explanation.settings["thread_query_windows"] is True
    by_id = {c.id: c for c in result.explanation.candidates}
    reply = by_id[turns[1]]
    assert reply.thread is not None and reply.thread.dense_chunk == "window"
    assert (reply.thread.before, reply.thread.after) == ([turns[0]], [turns[2]])


def test_writes_embed_no_window(open_runtime: OpenRuntime) -> None:
    """The window costs nothing at write: every turn has its one own chunk."""
    rt = open_runtime(**ON)
    talk(rt)
    with rt.store().reading() as conn:
        chunks = [int(n) for (n,) in conn.execute("SELECT chunks FROM memory_embeddings")]
    assert chunks == [1] * len(TURNS)


def scores_of(result: SearchResult) -> list[tuple[str, float]]:
    return [(hit.id, hit.score) for hit in result.results]


@pytest.mark.parametrize("thread", [None, "alone"])
def test_memories_without_neighbours_rank_and_score_as_before(
    open_runtime: OpenRuntime, thread: str | None
) -> None:
    """No thread, or a thread of one memory each (a session stored whole): nothing changes."""
    on, off = open_runtime(**ON), open_runtime(**(ON | {"thread_query_windows": False}))
    for runtime in (on, off):
        for i, content in enumerate(TURNS):
            remember(runtime, content, kind="episode", thread=None if thread is None else f"t{i}")
        assert runtime.vectors.caught_up(DEADLINE_S)
        loaded_dense_copy(runtime)  # both from the copy: sqlite-vec rounds differently
    for mode in ("dense", "hybrid"):
        got_on = search(on, QUESTION, mode=mode, limit=len(TURNS))
        got_off = search(off, QUESTION, mode=mode, limit=len(TURNS))
        assert [s for _, s in scores_of(got_on)] == [s for _, s in scores_of(got_off)]
        assert [TURNS.index(h.content) for h in got_on.results] == [
            TURNS.index(h.content) for h in got_off.results
        ]


def test_the_in_memory_copy_and_sqlite_vec_agree(open_runtime: OpenRuntime) -> None:
    copied = open_runtime(**ON)
    direct = open_runtime(**(ON | {"dense_copy_max_rows": 0}))  # never loads the copy
    turns_copied, turns_direct = talk(copied), talk(direct)
    loaded_dense_copy(copied)
    got_copied = search(copied, QUESTION, mode="dense", explain=True).explanation
    got_direct = search(direct, QUESTION, mode="dense", explain=True).explanation
    assert got_copied is not None and got_direct is not None
    assert got_copied.settings["dense_index"] == "memory"
    assert got_direct.settings["dense_index"] == "sqlite-vec"
    position = {m: i for i, m in enumerate(turns_copied)} | {
        m: i for i, m in enumerate(turns_direct)
    }

    def by_turn(explanation: Explanation) -> dict[int, float | None]:
        return {position[c.id]: c.window_similarity for c in explanation.candidates}

    copied_scores, direct_scores = by_turn(got_copied), by_turn(got_direct)
    assert copied_scores.keys() == direct_scores.keys()
    assert any(score is not None for score in copied_scores.values())
    for turn, score in copied_scores.items():
        assert score == pytest.approx(direct_scores[turn], abs=1e-5)


def test_a_forgotten_neighbour_leaves_the_window(open_runtime: OpenRuntime) -> None:
    rt = open_runtime(**ON)
    turns = talk(rt)
    memory_ops.forget(ctx_of(rt), ForgetParams(scope=SCOPE, id=turns[0]))
    assert rt.vectors.caught_up(DEADLINE_S)
    seq = seq_of(rt, turns[1])
    with rt.store().reading() as conn:
        members = thread_sql.window_members(conn, [seq])[seq]
    assert members == [seq, seq_of(rt, turns[2])]
    model = rt.models.get("embedder", 0.0)
    query = np.asarray(model.embed_queries([QUESTION])[0])
    vectors = embedded(rt, TURNS[1:3])
    total = vectors.sum(axis=0)
    assert dense(rt)[turns[1]] == pytest.approx(
        max(float(total @ query / np.linalg.norm(total)), float(vectors[0] @ query)), abs=1e-4
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_window_members_are_in_thread_order(
    make_runtime: Callable[..., Runtime], request: pytest.FixtureRequest, backend: str
) -> None:
    db = request.getfixturevalue("pg_url") if backend == "postgres" else None
    rt = make_runtime(
        db, embedder="none", reranker="none", thread_window_before=2, thread_window_after=1
    )
    turns = talk(rt)
    with rt.store().reading() as conn:  # through the store: SQL of either backend
        records = [memory_sql.get(conn, SCOPE, m) for m in turns]
        seqs = [record.seq for record in records if record is not None]
        found = thread_sql.window_members(conn, seqs)
    assert found[seqs[0]] == seqs[0:2]
    assert found[seqs[3]] == seqs[1:5]
    assert found[seqs[5]] == seqs[3:6]
    with rt.store().reading() as conn:
        assert thread_sql.window_members(conn, [seqs[0] + 100]) == {}


def test_explain_names_the_own_chunk_when_no_window_is_embedded(
    open_runtime: OpenRuntime,
) -> None:
    """By default the window is in FTS5 only: the stored chunks are the memory's own, and
    explain says so (it once found the chunks and the entry's parts out of step: None)."""
    rt = open_runtime(thread_window_before=1, thread_window_after=1, thread_query_windows=False)
    turns = talk(rt)
    result = search(rt, TURNS[0], mode="dense", explain=True)
    assert result.explanation is not None
    first = next(c for c in result.explanation.candidates if c.id == turns[0])
    assert first.thread is not None and first.thread.dense_chunk == "own"
    assert first.window_similarity is None


def test_a_neighbour_of_a_kind_not_asked_for_takes_no_dense_slot(
    open_runtime: OpenRuntime,
) -> None:
    """A window reaches every kind its thread holds; the kinds filter still holds for what
    the dense channel ranks."""
    rt = open_runtime(**ON)
    ask = remember(rt, TURNS[0], kind="note", thread="chat", occurred_at="2024-05-08T10:00:00Z")
    reply = remember(
        rt, TURNS[1], kind="episode", thread="chat", occurred_at="2024-05-08T10:01:00Z"
    )
    assert rt.vectors.caught_up(DEADLINE_S)
    result = search(rt, QUESTION, mode="dense", kinds=["episode"], explain=True)
    assert ids(result) == [reply]
    assert result.explanation is not None
    by_id = {c.id: c for c in result.explanation.candidates}
    assert ask not in by_id or by_id[ask].dense_rank is None
    assert by_id[reply].window_similarity is not None


def test_turns_that_share_a_window_share_its_score_to_the_last_bit() -> None:
    """Three turns whose windows hold the same three members, each listed in its own order
    (as stores list them): one score for all, so their order falls to the tie-break, the
    same in every store. Float sums depend on their order; these vectors make it show."""
    seqs = np.array([1, 2, 3])
    nearest = np.array([[1e8, 0.0], [1.0, 1.0], [-1e8, 0.0]], dtype=np.float32)
    query = np.array([1.0, 0.0], dtype=np.float32)
    windows = {1: [1, 2, 3], 2: [1, 3, 2], 3: [3, 1, 2]}
    scores = window_scores(query, windows, seqs, nearest)
    assert set(scores) == {1, 2, 3}
    assert len(set(scores.values())) == 1


def test_a_windows_score_does_not_depend_on_the_others_scored_with_it() -> None:
    """A search scores a few hundred windows at once, a different few hundred each time; a
    window's score must be the one it gets alone, or the same memory ranks differently by
    which other hits came with it (a matrix product may round a row by the batch's shape)."""
    rng = np.random.default_rng(7)
    seqs = np.arange(1, 601)
    nearest = rng.standard_normal((600, 384)).astype(np.float32)
    nearest /= np.linalg.norm(nearest, axis=1, keepdims=True)
    query = rng.standard_normal(384).astype(np.float32)
    query /= np.linalg.norm(query)
    windows = {int(s): [int(m) for m in range(max(1, s - 2), min(600, s + 2) + 1)] for s in seqs}
    together = window_scores(query, windows, seqs, nearest)
    alone = {
        s: window_scores(query, {s: members}, seqs, nearest)[s] for s, members in windows.items()
    }
    assert together == alone


def test_members_without_vectors_and_repeated_members_count_once_or_not_at_all() -> None:
    seqs = np.array([10, 20, 30])
    nearest = np.eye(3, dtype=np.float32)
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    scores = window_scores(query, {10: [10, 20, 20, 99], 20: [99, 20], 30: [30, 20]}, seqs, nearest)
    # 10: rows 10 and 20 once each; 20: only itself has a vector, a window of one; 30: 30+20
    assert set(scores) == {10, 30}
    assert scores[10] == pytest.approx(1 / np.sqrt(2)) and scores[30] == pytest.approx(0.0)
