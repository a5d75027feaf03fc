"""The feedback channels and thread aggregation (issue 15): RM3 on the lexical query, a second
dense query moved toward the best lexical hits, and a thread's score shared by its turns.

Through `memory.search`'s handler on real SQLite files with real MiniLM, plus the pure pieces
of `retrieval.feedback`. Each channel is off by default, so each test turns it on and checks
what it adds against the same search without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from memproc.retrieval import feedback
from memproc.retrieval.query import STOPWORDS
from memproc.runtime import Runtime
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from searchkit import OpenRuntime, embedder_row, ids, remember, remember_all, search, seq_of

# Three notes say "zebrafish" with "morpholino"; one says "morpholino" without "zebrafish":
# only feedback from the first three can reach it from the query "zebrafish".
ZEBRAFISH = {
    "assay": "The zebrafish assay used a morpholino knockdown of the gene.",
    "larvae": "Zebrafish larvae showed fin defects after morpholino injection.",
    "dose": "Morpholino dose for zebrafish embryos was halved in March.",
    "batch": "The second batch of morpholino injections failed completely.",
    "cat": "The cat sleeps on the sofa.",
    "revenue": "Quarterly revenue grew by eight percent.",
}


# -- RM3 -------------------------------------------------------------------------------------


def test_rm3_finds_a_memory_by_the_top_hits_words(open_runtime: OpenRuntime) -> None:
    plain = open_runtime()
    memories = remember_all(plain, ZEBRAFISH)
    without = search(plain, "zebrafish", mode="lexical", explain=True)
    assert memories["batch"] not in ids(without)
    assert without.explanation is not None
    assert without.explanation.queries.lexical_feedback is None
    assert without.explanation.queries.feedback_terms is None

    rm3 = open_runtime(
        plain.config.db,
        lexical_feedback_docs=3,
        lexical_feedback_terms=3,
        lexical_feedback_idf=False,
        lexical_feedback_weight=0.5,
    )
    found = search(rm3, "zebrafish", mode="lexical", explain=True)
    assert memories["batch"] in ids(found)
    assert set(ids(found)[:3]) == {memories[k] for k in ("assay", "larvae", "dose")}
    assert found.explanation is not None
    terms = found.explanation.queries.feedback_terms
    assert terms is not None and "morpholino" in terms
    assert "zebrafish" not in terms  # the query's own words are not fed back
    assert abs(sum(terms.values()) - 1.0) < 1e-3
    assert '"morpholino"' in (found.explanation.queries.lexical_feedback or "")
    assert found.explanation.settings["feedback"]["lexical_docs"] == 3


def test_rm3_leaves_a_query_without_hits_alone(open_runtime: OpenRuntime) -> None:
    runtime = open_runtime(lexical_feedback_docs=3)
    remember_all(runtime, ZEBRAFISH)
    result = search(runtime, "photosynthesis", mode="lexical", explain=True)
    assert ids(result) == []
    assert result.explanation is not None
    assert result.explanation.queries.lexical_feedback is None


def test_idf_keeps_a_word_every_memory_shares_out_of_the_feedback(
    open_runtime: OpenRuntime,
) -> None:
    """Every turn of a chat starts with its speaker: plain RM1 feeds the name back first."""
    chat = {name: f"Caroline: {text}" for name, text in ZEBRAFISH.items()}
    plain = open_runtime(
        lexical_feedback_docs=3, lexical_feedback_terms=1, lexical_feedback_idf=False
    )
    remember_all(plain, chat)
    without = search(plain, "zebrafish", mode="lexical", explain=True)
    assert without.explanation is not None
    assert list(without.explanation.queries.feedback_terms or {}) == ["caroline"]
    idf = open_runtime(
        plain.config.db,
        lexical_feedback_docs=3,
        lexical_feedback_terms=1,
        lexical_feedback_idf=True,
    )
    found = search(idf, "zebrafish", mode="lexical", explain=True)
    assert found.explanation is not None
    chosen = list(found.explanation.queries.feedback_terms or {})
    hit_words = {w for k in ("assay", "larvae", "dose") for w in feedback.tokens(ZEBRAFISH[k])}
    assert len(chosen) == 1 and chosen != ["caroline"] and chosen[0] in hit_words


def test_document_frequencies_count_memories_holding_each_term(rt: Runtime) -> None:
    remember_all(rt, ZEBRAFISH)
    with rt.store().reading() as conn:
        total, counts = memory_sql.document_frequencies(
            conn, ["morpholino", "Zebrafish", "injections", "photosynthesis"]
        )
    assert total == len(ZEBRAFISH)
    # FTS5 reads each term as a query: case folded, stemmed ("injections" -> "injection").
    assert counts == {"morpholino": 4, "Zebrafish": 3, "injections": 2, "photosynthesis": 0}


def test_idf_weighting_renormalises_and_prefers_rare_terms() -> None:
    terms = [("common", 0.6), ("rare", 0.4)]
    weighed = feedback.weigh_by_idf(terms, total=100, counts={"common": 90, "rare": 2}, count=2)
    assert [t for t, _ in weighed] == ["rare", "common"]
    assert abs(sum(w for _, w in weighed) - 1.0) < 1e-9
    assert feedback.weigh_by_idf(terms, 100, {"common": 90, "rare": 2}, count=1)[0][0] == "rare"


def test_relevance_model_weighs_terms_by_frequency_and_hit_score() -> None:
    hits = [("kiln glaze kiln the of", 3.0), ("glaze crackle", 1.0), ("crackle", 1.0)]
    terms = feedback.relevance_model(hits, "pottery", count=10)
    weights = dict(terms)
    assert set(weights) == {"kiln", "glaze", "crackle"}  # function words dropped
    assert weights["kiln"] > weights["glaze"]  # twice in the best hit
    assert [t for t, _ in terms] == sorted(weights, key=lambda t: (-weights[t], t))
    assert abs(sum(weights.values()) - 1.0) < 1e-9
    assert feedback.relevance_model(hits, "kiln", count=1)[0][0] != "kiln"
    assert feedback.relevance_model([], "kiln", count=5) == []


def test_relevance_model_never_feeds_back_function_words_or_single_characters() -> None:
    text = " ".join(sorted(STOPWORDS)) + " x 42 7b"
    assert [t for t, _ in feedback.relevance_model([(text, 1.0)], "q", 100)] == ["7b"]


def test_interpolation_adds_the_feedback_score_at_its_weight() -> None:
    combined = feedback.interpolate([(1, 4.0), (2, 3.0)], [(3, 5.0), (2, 4.0)], 0.5)
    assert combined == [(2, 5.0), (1, 4.0), (3, 2.5)]


# -- dense feedback (Rocchio) ----------------------------------------------------------------


@pytest.mark.parametrize("dense_as", ["channel", "query"])
def test_dense_feedback_moves_the_query_toward_the_top_lexical_hit(
    open_runtime: OpenRuntime, dense_as: str
) -> None:
    plain = open_runtime()
    memories = remember_all(plain, ZEBRAFISH)
    query = "zebrafish morpholino assay knockdown"
    before = _candidate(search(plain, query, explain=True), memories["assay"])
    moved = open_runtime(plain.config.db, dense_feedback_docs=1, dense_feedback_as=dense_as)
    result = search(moved, query, explain=True)
    assert result.explanation is not None
    assert result.explanation.queries.dense_feedback_from == [memories["assay"]]
    after = _candidate(result, memories["assay"])
    assert before.dense_similarity is not None
    if dense_as == "channel":  # the question's own dense channel is kept beside it
        assert after.dense_similarity == pytest.approx(before.dense_similarity, abs=1e-6)
        assert after.dense_feedback_similarity is not None
        assert after.dense_feedback_similarity > before.dense_similarity
        assert result.explanation.counts["dense_feedback"] > 0
    else:  # the moved query replaces it
        assert after.dense_similarity is not None
        assert after.dense_similarity > before.dense_similarity
        assert after.dense_feedback_rank is None
        assert result.explanation.counts["dense_feedback"] == 0


def test_dense_feedback_is_off_by_default(rt: Runtime) -> None:
    remember_all(rt, ZEBRAFISH)
    result = search(rt, "zebrafish", explain=True)
    assert result.explanation is not None
    assert result.explanation.queries.dense_feedback_from is None
    assert all(c.dense_feedback_rank is None for c in result.explanation.candidates)


def test_vectors_of_returns_each_memorys_stored_chunks(rt: Runtime) -> None:
    memories = remember_all(rt, ZEBRAFISH)
    assert rt.vectors.caught_up(60.0)
    row = embedder_row(rt)
    seqs = [seq_of(rt, memories["assay"]), seq_of(rt, memories["cat"])]
    with rt.store().reading() as conn:
        found = vector_sql.vectors_of(conn, row, [*seqs, 10_000])
        one_by_one = {seq: vector_sql.chunk_vectors(conn, row, seq) for seq in seqs}
    assert found == one_by_one
    assert all(len(v) == row.dims * 4 for chunks in found.values() for v in chunks)


def test_rocchio_is_unit_length_and_leans_toward_the_hits() -> None:
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    hit = np.array([0.0, 1.0, 0.0], dtype=np.float32)
    moved = feedback.rocchio(query, [hit], 0.5)
    assert float(np.linalg.norm(moved)) == pytest.approx(1.0)
    assert float(moved @ hit) > float(query @ hit)
    assert feedback.rocchio(query, [], 0.5) is query
    chunks = [np.array([0.0, 0.0, 1.0]), np.array([0.6, 0.8, 0.0])]
    chosen = feedback.nearest_chunk(query, chunks)
    assert chosen is not None and chosen[0] == pytest.approx(0.6)


# -- thread aggregation ----------------------------------------------------------------------

# One turn outside any thread says it all; four turns of one conversation each say part.
LONE = "Espresso grinder settings for the new machine: fine grind, 18 grams."
THREAD_TURNS = [
    "We finally bought the espresso machine.",
    "Which grinder did you get?",
    "The grinder has forty settings.",
    "Finding the right settings took a week.",
]


def _store_thread(runtime: Runtime) -> tuple[str, list[str]]:
    lone = remember(runtime, LONE)
    turns = [
        remember(runtime, text, thread="coffee", occurred_at=f"2026-01-0{i + 1}T10:00:00Z")
        for i, text in enumerate(THREAD_TURNS)
    ]
    return lone, turns


def test_thread_aggregation_lifts_the_turns_of_a_matching_conversation(
    open_runtime: OpenRuntime,
) -> None:
    plain = open_runtime()
    lone, turns = _store_thread(plain)
    query = "espresso grinder settings"
    assert ids(search(plain, query))[0] == lone
    aggregated = open_runtime(plain.config.db, thread_score_weight=1.0)
    result = search(aggregated, query, explain=True)
    assert ids(result)[0] in turns
    assert result.explanation is not None
    scores = {c.id: c.thread_score for c in result.explanation.candidates}
    assert len({scores[t] for t in turns}) == 1  # one score per thread, shared by its turns
    turn_score = scores[turns[0]]
    lone_score = scores[lone]
    assert turn_score is not None and lone_score is not None and turn_score > lone_score


def test_thread_aggregation_keeps_the_order_of_memories_without_threads(
    open_runtime: OpenRuntime,
) -> None:
    plain = open_runtime()
    remember_all(plain, ZEBRAFISH)
    aggregated = open_runtime(plain.config.db, thread_score_weight=2.0)
    query = "zebrafish morpholino"
    assert ids(search(aggregated, query)) == ids(search(plain, query))


def _candidate(result, memory_id):  # type: ignore[no-untyped-def]
    assert result.explanation is not None
    return next(c for c in result.explanation.candidates if c.id == memory_id)
