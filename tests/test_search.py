"""`memory.search` through its handler, with real MiniLM inference: the three modes, ranks,
inactive memories, filters, explain, reads that write nothing, use and boosts, and what happens
without an embedder or while it loads.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memproc.errors import NotFound, NotReady
from memproc.models import embedder as embedder_module
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.fusion import logistic, zscore_fusion
from memproc.retrieval.query import lexical_match
from memproc.runtime import Runtime
from memproc.store import memories as memory_sql
from memproc.store.quoting import fts_match_any
from memproc.wire.messages import FeedbackParams, ForgetParams, SearchResult
from searchkit import (
    CORPUS,
    DEADLINE_S,
    EMBEDDER,
    PARAPHRASE,
    OpenRuntime,
    cosine,
    count,
    ctx_of,
    ids,
    loaded_dense_copy,
    remember,
    remember_all,
    search,
    seq_of,
    settle,
)


def file_bytes(db: str) -> dict[str, bytes | None]:
    """The database and its WAL, byte for byte (None for a file that does not exist)."""
    out: dict[str, bytes | None] = {}
    for suffix in ("", "-wal"):
        path = Path(db + suffix)
        out[suffix or "db"] = path.read_bytes() if path.exists() else None
    return out


# -- finding the relevant memory in each mode ----------------------------------------------------


@pytest.mark.parametrize("mode", ["lexical", "dense", "hybrid"])
def test_each_mode_finds_the_obviously_relevant_memory(rt: Runtime, mode: str) -> None:
    memories = remember_all(rt, CORPUS)
    result = search(rt, "which registry does the deploy pipeline push images to", mode=mode)
    assert result.mode == mode
    assert result.degraded is None
    assert ids(result)[0] == memories["deploy"]


def test_a_paraphrase_with_no_shared_word_is_found_by_meaning_only(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    assert fts_match_any(PARAPHRASE) is not None
    assert memories["cat"] not in ids(search(rt, PARAPHRASE, mode="lexical"))
    assert ids(search(rt, PARAPHRASE, mode="dense"))[0] == memories["cat"]
    hybrid = search(rt, PARAPHRASE, mode="hybrid")
    assert ids(hybrid)[0] == memories["cat"]
    top = hybrid.results[0]
    assert (top.ranks.lexical, top.ranks.dense, top.ranks.fused) == (None, 1, 1)


def test_hybrid_hits_carry_each_stages_rank(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    result = search(rt, "deploy pipeline registry images", mode="hybrid", limit=3, explain=True)
    top = result.results[0]
    assert top.id == memories["deploy"]
    assert (top.ranks.lexical, top.ranks.dense, top.ranks.fused) == (1, 1, 1)
    assert top.ranks.rerank is None
    fused = [hit.ranks.fused for hit in result.results]
    assert fused == sorted(fused) and None not in fused
    for hit in result.results:
        assert hit.ranks.dense is not None  # every memory is within the dense pool
    assert [hit.score for hit in result.results] == sorted(
        (hit.score for hit in result.results), reverse=True
    )
    # The fused score (default fusion: zscore) is the logistic of the channels' scores, each
    # standardised over that channel's candidates, summed; explain carries the raw scores.
    assert result.explanation is not None
    candidates = result.explanation.candidates
    channels = {
        "lexical": {c.id: c.lexical_score for c in candidates if c.lexical_score is not None},
        "dense": {c.id: c.dense_similarity for c in candidates if c.dense_similarity is not None},
    }
    assert top.score == pytest.approx(logistic(zscore_fusion(channels)[top.id]))


def test_rrf_scores_are_reciprocal_ranks(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    """With `fusion = "rrf"` the fused score is reciprocal-rank fusion, k=60, of the ranks
    each hit reports."""
    rt = open_runtime(str(tmp_path / "rrf.db"), fusion="rrf", candidate_pool=20)
    remember_all(rt, CORPUS)
    top = search(rt, "deploy pipeline registry images", mode="hybrid", limit=3).results[0]
    assert top.ranks.lexical is not None and top.ranks.dense is not None
    expected = 1 / (60 + top.ranks.lexical) + 1 / (60 + top.ranks.dense)
    assert top.score == pytest.approx(expected)


def test_single_channel_modes_report_that_channels_rank_and_score(rt: Runtime) -> None:
    remember_all(rt, CORPUS)
    query = "the nightly postgres batch job"
    lexical = search(rt, query, mode="lexical").results
    assert all(hit.ranks.lexical is not None and hit.ranks.dense is None for hit in lexical)
    dense = search(rt, query, mode="dense").results
    assert all(hit.ranks.dense is not None and hit.ranks.lexical is None for hit in dense)
    assert dense[0].content == CORPUS["postgres"]
    # A dense-only score is the cosine similarity of query and memory.
    assert dense[0].score == pytest.approx(cosine(rt, query, CORPUS["postgres"]), abs=1e-4)


def test_searches_through_the_in_memory_copy_agree_with_sqlite_vec(
    open_runtime: OpenRuntime, tmp_path: Path
) -> None:
    db = str(tmp_path / "copy.db")
    with_copy = open_runtime(db)
    without_copy = open_runtime(db, dense_copy_max_rows=0)  # always sqlite-vec
    memories = remember_all(with_copy, CORPUS)
    loaded_dense_copy(with_copy)
    assert_same_dense_answers(with_copy, without_copy)
    # Written by the other runtime after the copy loaded: the copy learns it from the journal.
    kitten = remember(without_copy, "A small kitten dozes on the couch every afternoon.")
    # A search waits for its own runtime's deferred vectors, not another's (another process).
    assert without_copy.vectors.caught_up(60.0)
    via_copy = assert_same_dense_answers(with_copy, without_copy)
    assert ids(via_copy)[:2] == [kitten, memories["cat"]]


def assert_same_dense_answers(with_copy: Runtime, without_copy: Runtime) -> SearchResult:
    via_copy = search(with_copy, PARAPHRASE, mode="dense", explain=True)
    via_vec = search(without_copy, PARAPHRASE, mode="dense", explain=True)
    assert via_copy.explanation is not None and via_vec.explanation is not None
    assert via_copy.explanation.settings["dense_index"] == "memory"
    assert via_vec.explanation.settings["dense_index"] == "sqlite-vec"
    assert ids(via_copy) == ids(via_vec)
    for a, b in zip(via_copy.results, via_vec.results, strict=True):
        assert a.score == pytest.approx(b.score, abs=1e-5)
    return via_copy


# -- inactive memories and filters ---------------------------------------------------------------


def set_status_by_store(runtime: Runtime, memory_id: str, status: str) -> None:
    """Lifecycle states without a method yet (superseded, invalidated), set the store's way."""
    seq = seq_of(runtime, memory_id)
    with runtime.store().writing() as conn:
        memory_sql.set_status(conn, seq, status, "test")


@pytest.mark.parametrize("mode", ["lexical", "dense", "hybrid"])
def test_inactive_memories_never_take_candidate_slots(
    open_runtime: Callable[..., Runtime], mode: str
) -> None:
    """More inactive perfect matches than the candidate pool holds, and one weaker active
    match: it is still found with limit=1, and no inactive memory is even a candidate."""
    runtime = open_runtime(candidate_pool=10)
    better = {
        f"gone{i}": f"The deploy pipeline pushes container images to the registry, run {i}."
        for i in range(34)
    }
    gone = remember_all(runtime, better)
    weak = remember(runtime, "Deploy jobs also tag the images they build.")
    for n, memory_id in enumerate(gone.values()):
        if n % 3 == 0:
            set_status_by_store(runtime, memory_id, "superseded")
        elif n % 3 == 1:
            set_status_by_store(runtime, memory_id, "invalidated")
        else:
            memory_ops.forget(ctx_of(runtime), ForgetParams(scope="proj", id=memory_id))
    query = "deploy pipeline pushes container images to the registry"
    result = search(runtime, query, mode=mode, limit=1, explain=True)
    assert ids(result) == [weak]
    assert result.explanation is not None
    assert {c.id for c in result.explanation.candidates} == {weak}


def test_kinds_and_scopes_filter_both_channels(rt: Runtime) -> None:
    staging = remember(rt, "The staging database runs Postgres 16.", scope="a", kind="fact")
    prod_note = remember(rt, "The production database runs Postgres 15.", scope="a", kind="note")
    prod_b = remember(rt, "The production database runs Postgres 15.", scope="b", kind="fact")
    remember(rt, "The production database runs Postgres 15.", scope="c", kind="fact")
    query = "which postgres version does the production database run"
    for mode in ("lexical", "dense", "hybrid"):
        assert set(ids(search(rt, query, scope="a", mode=mode))) == {staging, prod_note}
        only_facts = search(rt, query, scope="a", kinds=["fact"], mode=mode, explain=True)
        assert ids(only_facts) == [staging], mode
        assert only_facts.explanation is not None
        assert [c.id for c in only_facts.explanation.candidates] == [staging]
        two_scopes = search(rt, query, scopes=["a", "b"], kinds=["fact"], mode=mode)
        assert set(ids(two_scopes)) == {staging, prod_b}, mode
        assert ids(two_scopes)[0] == prod_b, mode  # the better match, from the other scope


# -- explain ---------------------------------------------------------------------------------


def test_explain_accounts_for_every_candidate(rt: Runtime) -> None:
    remember_all(rt, CORPUS)
    query = "the deploy pipeline and the nightly batch job"
    now = "2026-06-01T00:00:00Z"
    result = search(rt, query, limit=2, explain=True, now=now)
    explanation = result.explanation
    assert explanation is not None
    candidates = explanation.candidates
    counts = explanation.counts
    assert len(candidates) == counts["candidates"] == len(CORPUS)  # dense sees every memory
    outcomes = ("returned", "below_confidence", "outside_limit", "filtered")
    assert sum(counts[o] for o in outcomes) == counts["candidates"]
    for outcome in outcomes:
        assert counts[outcome] == sum(c.outcome == outcome for c in candidates)
    assert counts["returned"] == 2 and counts["outside_limit"] == len(CORPUS) - 2
    assert counts["lexical"] == sum(c.lexical_rank is not None for c in candidates) >= 2
    assert counts["dense"] == sum(c.dense_rank is not None for c in candidates) == len(CORPUS)
    assert counts["reranked"] == 0
    returned = [c for c in candidates if c.outcome == "returned"]
    assert [c.id for c in returned] == ids(result)
    assert [c.final_score for c in returned] == [hit.score for hit in result.results]
    for candidate in candidates:
        assert candidate.fused_rank is not None and candidate.fused_score is not None
        assert candidate.boost == 1.0
        assert (candidate.rerank_rank, candidate.rerank_score) == (None, None)
    assert explanation.queries.lexical == lexical_match(query)  # function words dropped
    assert explanation.queries.dense == query  # MiniLM has no query prefix
    assert explanation.queries.embedder == EMBEDDER
    assert explanation.queries.reranker is None
    settings = explanation.settings
    assert settings["mode"] == "hybrid"
    assert settings["dense_index"] in ("memory", "sqlite-vec")
    assert (settings["rrf_k"], settings["candidate_pool"]) == (60, 60)
    assert settings["boosts"] == {
        "recency": 0.0,
        "half_life_days": 30.0,
        "importance": 0.0,
        "access": 0.0,
    }
    assert settings["now"] == "2026-06-01T00:00:00+00:00"


def test_without_explain_there_is_no_explanation(rt: Runtime) -> None:
    remember_all(rt, CORPUS)
    assert search(rt, "deploy").explanation is None


def test_explain_marks_a_candidate_with_a_stale_status_as_filtered(rt: Runtime) -> None:
    """A memory deactivated behind the store's back keeps its vectors (drift): dense still
    proposes it, and the pipeline refuses to serve it, saying why."""
    memories = remember_all(rt, CORPUS)
    with rt.store().writing() as conn:
        conn.execute("UPDATE memories SET status = 'forgotten' WHERE id = ?", (memories["cat"],))
    result = search(rt, PARAPHRASE, mode="dense", explain=True)
    assert memories["cat"] not in ids(result)
    assert result.explanation is not None
    (cat,) = [c for c in result.explanation.candidates if c.id == memories["cat"]]
    assert (cat.outcome, cat.reason, cat.status) == ("filtered", "status forgotten", "forgotten")
    assert result.explanation.counts["filtered"] == 1


def test_a_non_reinforcing_search_leaves_the_files_byte_identical(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "quiet.db")
    runtime = open_runtime(db, access_weight=1.0, recency_weight=1.0)
    memories = remember_all(runtime, CORPUS)
    memory_ops.feedback(
        ctx_of(runtime), FeedbackParams(scope="proj", id=memories["cat"], used=True)
    )
    before = file_bytes(db)
    assert before["-wal"], "the writes are still in the WAL, so it is compared too"
    for mode, explain in itertools.product(("lexical", "dense", "hybrid"), (False, True)):
        search(runtime, PARAPHRASE, mode=mode, explain=explain)
        search(runtime, "deploy pipeline", mode=mode, explain=explain, kinds=["note"], limit=1)
    loaded_dense_copy(runtime)
    search(runtime, PARAPHRASE, explain=True)  # through the in-memory copy as well
    assert file_bytes(db) == before
    assert count(runtime, "SELECT count(*) FROM memory_access") == 1
    # The comparison can fail: a reinforcing search does change the files.
    search(runtime, PARAPHRASE, reinforce=True)
    assert file_bytes(db) != before


# -- use: reinforce and feedback -------------------------------------------------------------


def access_rows(runtime: Runtime) -> list[tuple[str, str, int]]:
    with runtime.store().reading() as conn:
        rows = conn.execute(
            "SELECT m.id, a.event, a.used FROM memory_access AS a "
            "JOIN memories AS m ON m.seq = a.memory_seq ORDER BY a.id"
        ).fetchall()
    return [tuple(row) for row in rows]  # type: ignore[misc]


def test_reinforce_and_feedback_append_to_the_access_table(rt: Runtime) -> None:
    memories = remember_all(rt, CORPUS)
    result = search(rt, "deploy pipeline", limit=2, reinforce=True)
    assert len(result.results) == 2
    assert access_rows(rt) == [(memory_id, "search", 1) for memory_id in ids(result)]
    feedback = memory_ops.feedback(
        ctx_of(rt), FeedbackParams(scope="proj", id=memories["tabs"], used=False)
    )
    assert feedback.recorded is True
    memory_ops.feedback(ctx_of(rt), FeedbackParams(scope="proj", id=memories["ruff"], used=True))
    assert access_rows(rt)[2:] == [
        (memories["tabs"], "feedback", 0),
        (memories["ruff"], "feedback", 1),
    ]
    search(rt, "deploy pipeline", limit=2, reinforce=False)
    assert len(access_rows(rt)) == 4


def test_feedback_on_a_forgotten_or_unknown_memory_is_not_found(rt: Runtime) -> None:
    memory_id = remember(rt, "short lived")
    memory_ops.forget(ctx_of(rt), ForgetParams(scope="proj", id=memory_id))
    for target, scope in ((memory_id, "proj"), ("no-such-id", "proj"), (memory_id, "other")):
        with pytest.raises(NotFound):
            memory_ops.feedback(ctx_of(rt), FeedbackParams(scope=scope, id=target, used=True))
    assert access_rows(rt) == []


def test_the_access_boost_lifts_a_used_memory(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "access.db")
    plain = open_runtime(db)
    boosted = open_runtime(db, access_weight=1.0)
    lives = remember(plain, "The build cache lives in /var/cache/build on the CI runners.")
    kept = remember(plain, "On the CI runners the build cache is kept under /var/cache/build.")
    own_word = {lives: "lives", kept: "kept"}  # a word only that memory has
    query = "where is the build cache on the CI runners"
    first, second = ids(search(plain, query, limit=2))
    assert ids(search(boosted, query, limit=2)) == [first, second]  # no use recorded yet
    # Negative feedback is recorded but is not use.
    for _ in range(3):
        memory_ops.feedback(ctx_of(plain), FeedbackParams(scope="proj", id=second, used=False))
    assert ids(search(boosted, query, limit=2)) == [first, second]
    # A reinforcing search that returns only `second` plus positive feedback lift it.
    reinforcing = search(boosted, own_word[second], mode="lexical", reinforce=True)
    assert ids(reinforcing) == [second]
    memory_ops.feedback(ctx_of(plain), FeedbackParams(scope="proj", id=second, used=True))
    lifted = search(boosted, query, limit=2, explain=True)
    assert ids(lifted) == [second, first]
    assert lifted.explanation is not None
    boosts = {c.id: c.boost for c in lifted.explanation.candidates}
    assert boosts[second] == pytest.approx(1.0 + 2 / 5)  # 2 uses: weight * 2 / (2 + 3)
    assert boosts[first] == pytest.approx(1.0)
    # The weight is what makes use count: the plain runtime's order is unchanged.
    assert ids(search(plain, query, limit=2)) == [first, second]


# -- recency and importance ----------------------------------------------------------------------

STANDUP_QUERY = "what time is the weekly standup meeting on monday"
STANDUP = "The weekly standup meeting is on Monday at 10am."
NOTES = "Standup notes were shared in the team channel."
NOW = "2026-06-01T12:00:00Z"
# The boost tests run under reciprocal-rank fusion: there two memories' fused scores are
# close, so a boost decides between them. Under score fusion (the default) two candidates
# stand two standard deviations apart in each channel, and the relevance gap is the larger.
BOOSTED_FUSION = {"fusion": "rrf", "candidate_pool": 20}


def test_recency_weight_lifts_the_newer_memory(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "recency.db")
    plain = open_runtime(db, **BOOSTED_FUSION)
    fresh_first = open_runtime(
        db, recency_weight=5.0, recency_half_life_days=30.0, **BOOSTED_FUSION
    )
    standup = remember(plain, STANDUP, occurred_at="2020-01-01")
    notes = remember(plain, NOTES, occurred_at="2026-05-31T09:00:00+02:00")
    assert ids(search(plain, STANDUP_QUERY, now=NOW, limit=2)) == [standup, notes]
    boosted = search(fresh_first, STANDUP_QUERY, now=NOW, limit=2, explain=True)
    assert ids(boosted) == [notes, standup]
    assert boosted.explanation is not None
    boosts = {c.id: c.boost for c in boosted.explanation.candidates}
    assert boosts[notes] > 5.0 and boosts[standup] == pytest.approx(1.0, abs=1e-6)
    # Seen from a moment before either happened, both are "now": relevance decides again.
    assert ids(search(fresh_first, STANDUP_QUERY, now="2019-12-31", limit=2)) == [standup, notes]


def test_recency_falls_back_to_created_at_without_occurred_at(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "created.db")
    plain = open_runtime(db, **BOOSTED_FUSION)
    fresh_first = open_runtime(db, recency_weight=5.0, **BOOSTED_FUSION)
    standup = remember(plain, STANDUP, occurred_at="2020-01-01")
    notes = remember(plain, NOTES)  # created just now
    assert ids(search(plain, STANDUP_QUERY, limit=2)) == [standup, notes]
    assert ids(search(fresh_first, STANDUP_QUERY, limit=2)) == [notes, standup]


def test_importance_weight_lifts_the_more_important_memory(
    open_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    db = str(tmp_path / "importance.db")
    plain = open_runtime(db, **BOOSTED_FUSION)
    important_first = open_runtime(db, importance_weight=1.0, **BOOSTED_FUSION)
    standup = remember(plain, STANDUP, importance=0.0)
    notes = remember(plain, NOTES, importance=1.0)
    assert ids(search(plain, STANDUP_QUERY, limit=2)) == [standup, notes]
    boosted = search(important_first, STANDUP_QUERY, limit=2, explain=True)
    assert ids(boosted) == [notes, standup]
    assert boosted.explanation is not None
    assert {c.id: c.boost for c in boosted.explanation.candidates} == {
        notes: pytest.approx(1.5),
        standup: pytest.approx(0.5),
    }


# -- without an embedder ---------------------------------------------------------------------


def test_with_no_embedder_hybrid_degrades_to_lexical_and_dense_is_refused(
    open_runtime: Callable[..., Runtime],
) -> None:
    runtime = open_runtime(embedder="none")
    memories = remember_all(runtime, CORPUS)
    result = search(runtime, "deploy pipeline", mode="hybrid", explain=True)
    assert result.mode == "lexical"
    assert result.degraded is not None and "lexical" in result.degraded
    assert ids(result)[0] == memories["deploy"]
    assert result.results[0].ranks.dense is None
    assert result.explanation is not None
    assert result.explanation.queries.dense is None
    assert result.explanation.queries.embedder is None
    assert search(runtime, "deploy pipeline", mode="lexical").degraded is None
    with pytest.raises(NotReady) as refused:
        search(runtime, PARAPHRASE, mode="dense")
    assert refused.value.is_retryable() is False
    assert count(runtime, "SELECT count(*) FROM memory_embeddings") == 0


def test_an_explicit_embedder_that_is_not_installed_is_not_ready_for_good(
    open_runtime: Callable[..., Runtime],
) -> None:
    runtime = open_runtime(embedder="no-such-embedder")
    memory_id = remember(runtime, "writes still work without vectors")
    for mode in ("dense", "hybrid"):
        with pytest.raises(NotReady) as refused:
            search(runtime, "writes", mode=mode)
        assert refused.value.is_retryable() is False
        assert refused.value.data["component"] == "embedder"
        assert "not_installed" in refused.value.data["reason"]
    assert ids(search(runtime, "writes", mode="lexical")) == [memory_id]


def test_a_search_waits_for_a_loading_embedder_then_gets_a_retryable_error(
    open_runtime: Callable[..., Runtime], monkeypatch: pytest.MonkeyPatch
) -> None:
    release = threading.Event()
    real = embedder_module.Embedder

    class HeldEmbedder(real):  # type: ignore[misc, valid-type]
        """The real embedder, whose loading does not finish until the test says so."""

        def __init__(self, directory: str, threads: int = 1) -> None:
            assert release.wait(DEADLINE_S), "the test never released the embedder"
            super().__init__(directory, threads)

    monkeypatch.setattr(embedder_module, "Embedder", HeldEmbedder)
    runtime = open_runtime(load=False, model_wait_s=0.05)
    try:
        runtime.start_models()
        memory_id = remember(runtime, PARAPHRASE.replace("couch", "sofa"))  # not embedded
        for mode in ("dense", "hybrid"):
            with pytest.raises(NotReady) as waiting:
                search(runtime, "kitten", mode=mode)
            assert waiting.value.is_retryable() is True
            assert waiting.value.data["component"] == "embedder"
        assert ids(search(runtime, "kitten", mode="lexical")) == [memory_id]
        assert runtime.models.states()["embedder"]["state"] == "loading"
    finally:
        release.set()
    # Once loaded, the backfill embeds what was written meanwhile and dense search finds it.
    settle()
    assert ids(search(runtime, "a little cat asleep", mode="dense")) == [memory_id]


# -- fusion ------------------------------------------------------------------------------------

DEPLOY_NOTES = {
    f"n{i}": f"Deploy note {i}: the {word} step of the release pipeline pushes images."
    for i, word in enumerate(
        [
            "build",
            "test",
            "lint",
            "sign",
            "scan",
            "tag",
            "push",
            "verify",
            "notify",
            "archive",
            "audit",
            "mirror",
            "cache",
            "prune",
            "rollback",
            "canary",
            "promote",
            "freeze",
            "thaw",
            "label",
            "publish",
            "index",
        ]
    )
}


@pytest.mark.parametrize("fusion", ["rrf", "zscore"])
def test_asking_for_more_results_never_reorders_the_first_ones(
    open_runtime: Callable[..., Runtime], fusion: str
) -> None:
    """Channels gather at least `limit` deep, but the head is fused from `candidate_pool`
    deep only: the first results are the same whatever the limit."""
    runtime = open_runtime(candidate_pool=10, fusion=fusion)
    remember_all(runtime, DEPLOY_NOTES)
    query = "which release pipeline step signs and pushes the images"
    short = ids(search(runtime, query, limit=5))
    long = search(runtime, query, limit=len(DEPLOY_NOTES), explain=True)
    assert ids(long)[:5] == short
    assert len(ids(long)) == len(DEPLOY_NOTES)
    assert long.explanation is not None
    assert long.explanation.settings["fusion"] == fusion
    assert long.explanation.settings["candidate_pool"] == 10
    assert long.explanation.settings["gathered_per_channel"] == len(DEPLOY_NOTES)


def test_zscore_fusion_finds_by_words_and_by_meaning(open_runtime: OpenRuntime) -> None:
    runtime = open_runtime(fusion="zscore")
    memories = remember_all(runtime, CORPUS)
    assert ids(search(runtime, PARAPHRASE))[0] == memories["cat"]
    top = search(runtime, "which registry does the deploy pipeline push images to").results[0]
    assert top.id == memories["deploy"]
    assert 0.0 < top.score < 1.0
