"""The search pipeline: gather candidates, fuse, boost, rerank, gate, cut to the limit.

Every candidate any channel proposed is kept with its per-stage numbers and an outcome, so
`explain` can show what was returned and why the rest was not. The pipeline only reads: it
gathers inside one read transaction and ranks outside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import apsw

from memproc.lifecycle import State
from memproc.retrieval import feedback, windows
from memproc.retrieval.boosts import BoostWeights, boost_factor, parse_time
from memproc.retrieval.fusion import (
    group_totals,
    logistic,
    reciprocal_rank_fusion,
    zscore_fusion,
)
from memproc.retrieval.timeframe import TimeFrame
from memproc.store import MemoryRecord, validity
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.vectors import EmbedderRow

if TYPE_CHECKING:  # numpy-backed: not imported at start-up
    from memproc.retrieval.dense_cache import DenseCache

# What became of a candidate: the pipeline decides it, and `explain` shows it. The wire's
# `memproc.wire.messages.Outcome` is the same set in the same order, and a test keeps them
# so: retrieval works below the wire and does not import it.
Outcome = Literal["returned", "below_confidence", "outside_limit", "filtered"]

# Dense search runs over chunks; ask for more chunks than memories so that several chunks of
# one long memory do not crowd out other memories.
CHUNKS_PER_CANDIDATE = 3
# With idf-weighted lexical feedback, how many times more terms than it keeps RM1 proposes:
# idf can only choose among what the hits say often enough.
IDF_CHOICE = 4


@dataclass(frozen=True)
class FeedbackPlan:
    """The feedback channels' settings (see Config and `retrieval.feedback`); 0 docs: off."""

    lexical_docs: int = 0
    lexical_terms: int = 10
    lexical_weight: float = 0.25
    lexical_idf: bool = True  # weigh feedback terms by their idf in the store
    dense_docs: int = 0
    dense_weight: float = 0.25
    dense_as: str = "query"  # "query": replaces the dense query; "channel": a channel of its own
    thread_weight: float = 0.0  # thread aggregation; 0: off


@dataclass(frozen=True)
class SearchPlan:
    scopes: list[str]
    kinds: list[str] | None
    limit: int
    lexical_match: str | None  # None: no lexical channel
    query_vector: bytes | None  # None: no dense channel
    embedder: EmbedderRow | None
    dense_cache: DenseCache | None
    rrf_k: int
    pool: int  # how deep each channel gathers: at least the request's limit
    rerank_pool: int
    min_confidence: float
    weights: BoostWeights
    now: datetime
    timeframe: TimeFrame | None = None
    fusion: str = "rrf"
    depth: int = 0  # how deep each channel's list enters fusion for the head; 0: all of it
    # The moment whose truth is asked for (stored form), and whether what was superseded by
    # then is wanted too. None: now, by status (the fast path), with `valid_at` (now, stored
    # form) checked against each candidate's window.
    as_of: str | None = None
    history: bool = False
    valid_at: str | None = None
    feedback: FeedbackPlan = FeedbackPlan()
    # Score each threaded memory in the dense channel by its thread window too, at query
    # time from stored vectors (see `retrieval.windows`, Config.thread_query_windows).
    query_windows: bool = False


@dataclass
class Candidate:
    record: MemoryRecord
    lexical_rank: int | None = None
    lexical_score: float | None = None
    dense_rank: int | None = None
    dense_similarity: float | None = None
    window_similarity: float | None = None  # its thread window's, when scored at query time
    feedback_rank: int | None = None  # in the dense feedback channel
    feedback_similarity: float | None = None
    thread_score: float | None = None  # the thread's summed fused score, when aggregated
    fused_score: float = 0.0
    fused_rank: int | None = None
    time_rank: int | None = None
    uses: int = 0
    boost: float = 1.0
    rerank_score: float | None = None
    rerank_rank: int | None = None
    final_score: float = 0.0
    outcome: Outcome = "outside_limit"
    reason: str | None = None
    state: State | None = None  # its state at the plan's `as_of`; None: none then, or no as_of


# -- gathering (inside a read transaction) ---------------------------------------------------


@dataclass
class Gathered:
    candidates: dict[int, Candidate]
    dense_source: str | None = None  # "memory" (the in-process copy) or "sqlite-vec"
    # What the feedback channels added, for explain: RM3's terms with their weights and the
    # second lexical query, and the memories whose vectors moved the dense feedback query.
    feedback_terms: list[tuple[str, float]] | None = None
    lexical_feedback: str | None = None
    dense_feedback_from: list[int] | None = None


def gather(conn: apsw.Connection, plan: SearchPlan) -> Gathered:
    gathered = Gathered(candidates={})
    if plan.lexical_match is not None:
        _gather_lexical(conn, plan, gathered)
    if plan.query_vector is not None and plan.embedder is not None:
        moved = _dense_feedback_query(conn, plan, gathered)
        if moved is None or plan.feedback.dense_as == "channel":
            gathered.dense_source = _gather_dense(conn, plan, gathered.candidates)
        if moved is not None:
            gathered.dense_source = _gather_dense(
                conn, plan, gathered.candidates, moved, plan.feedback.dense_as == "channel"
            )
    if plan.as_of is not None:
        held = validity.states_at(conn, list(gathered.candidates), plan.as_of, history=plan.history)
        for seq, state in held.items():
            gathered.candidates[seq].state = state
    if plan.weights.access > 0 and gathered.candidates:
        for seq, uses in vector_sql.access_counts(conn, list(gathered.candidates)).items():
            gathered.candidates[seq].uses = uses
    return gathered


def _gather_lexical(conn: apsw.Connection, plan: SearchPlan, gathered: Gathered) -> None:
    assert plan.lexical_match is not None
    records: dict[int, MemoryRecord] = {}
    ranked = _lexical_rows(conn, plan, plan.lexical_match, records)
    if plan.feedback.lexical_docs:
        ranked = _with_lexical_feedback(conn, plan, ranked, records, gathered)
    out = gathered.candidates
    for rank, (seq, score) in enumerate(ranked, start=1):
        candidate = out.setdefault(seq, Candidate(record=records[seq]))
        candidate.lexical_rank, candidate.lexical_score = rank, score


def _lexical_rows(
    conn: apsw.Connection, plan: SearchPlan, match: str, records: dict[int, MemoryRecord]
) -> list[tuple[int, float]]:
    """(seq, score) best first for one MATCH expression, score the negated bm25 (higher is
    better); the records land in `records`."""
    if plan.as_of is None:
        rows = memory_sql.search_lexical(
            conn, match, scopes=plan.scopes, kinds=plan.kinds, limit=plan.pool
        )
    else:
        rows = validity.search_lexical_at(
            conn,
            match,
            scopes=plan.scopes,
            kinds=plan.kinds,
            limit=plan.pool,
            weights=memory_sql.BM25_WEIGHTS,
            as_of=plan.as_of,
            history=plan.history,
        )
    for row in rows:
        records[row.record.seq] = row.record
    return [(row.record.seq, -float(row.bm25)) for row in rows]


def _with_lexical_feedback(
    conn: apsw.Connection,
    plan: SearchPlan,
    ranked: list[tuple[int, float]],
    records: dict[int, MemoryRecord],
    gathered: Gathered,
) -> list[tuple[int, float]]:
    """RM3: the top hits' terms as a second query, its bm25 added at a lower weight."""
    assert plan.lexical_match is not None
    settings = plan.feedback
    hits = [(records[seq].content, score) for seq, score in ranked[: settings.lexical_docs]]
    if settings.lexical_idf:  # a wider choice, narrowed by idf
        wide = feedback.relevance_model(
            hits, plan.lexical_match, settings.lexical_terms * IDF_CHOICE
        )
        total, counts = memory_sql.document_frequencies(conn, [term for term, _ in wide])
        terms = feedback.weigh_by_idf(wide, total, counts, settings.lexical_terms)
    else:
        terms = feedback.relevance_model(hits, plan.lexical_match, settings.lexical_terms)
    match = feedback.feedback_match(terms)
    if match is None:
        return ranked
    gathered.feedback_terms, gathered.lexical_feedback = terms, match
    extra = _lexical_rows(conn, plan, match, records)
    return feedback.interpolate(ranked, extra, settings.lexical_weight)[: plan.pool]


def _dense_feedback_query(
    conn: apsw.Connection, plan: SearchPlan, gathered: Gathered
) -> bytes | None:
    """Rocchio: the question's vector moved toward the top lexical hits' vectors (each hit's
    chunk nearest the question); None when off or when no hit has vectors."""
    settings = plan.feedback
    if not settings.dense_docs or plan.query_vector is None or plan.embedder is None:
        return None
    lexical = [c for c in gathered.candidates.values() if c.lexical_rank is not None]
    lexical.sort(key=lambda c: c.lexical_rank or 0)
    top = [c.record.seq for c in lexical[: settings.dense_docs]]
    stored = vector_sql.vectors_of(conn, plan.embedder, top)
    moved, used = feedback.moved_query(
        plan.query_vector, [stored.get(s, []) for s in top], settings.dense_weight
    )
    if moved is not None:
        gathered.dense_feedback_from = [seq for seq, kept in zip(top, used, strict=True) if kept]
    return moved


def _gather_dense(
    conn: apsw.Connection,
    plan: SearchPlan,
    out: dict[int, Candidate],
    vector: bytes | None = None,
    as_feedback: bool = False,
) -> str:
    """The dense channel for `vector` (the question's own by default); `as_feedback` ranks
    into the dense feedback channel instead of the dense one."""
    hits, source = _nearest_chunks(conn, plan, vector or plan.query_vector)
    best: dict[int, float] = {}
    for seq, distance in hits:  # nearest first: the first chunk seen is a memory's best
        best.setdefault(seq, 1.0 - distance)
    scored: dict[int, float] = {}
    if plan.query_windows and not as_feedback:
        query = vector or plan.query_vector
        assert query is not None and plan.embedder is not None
        # The KNN's budget, unless a filter below may drop what a window brought in (the
        # window reaches every kind, and memories superseded since `as_of`).
        keep = len(best) if plan.kinds is None and plan.as_of is None else None
        found = windows.with_windows(conn, plan.embedder, plan.dense_cache, query, best, keep)
        best, scored = found
    records = memory_sql.get_many_by_seq(conn, [seq for seq in best if seq not in out])
    # Vectors leave with the status change, so this is a second line of defence: a memory
    # that may not be served (stray vectors: drift) never takes one of the pool's slots; it
    # is kept, unranked, only so that `explain` can show it was filtered.
    stray = {seq for seq, r in records.items() if r.status not in SEARCHABLE_STATUSES}
    if plan.as_of is not None:  # what did not hold true then takes no slot either
        held = validity.states_at(conn, list(records), plan.as_of, history=plan.history)
        stray = set(records) - set(held)
    if plan.kinds is not None:  # a thread window may reach a memory of another kind
        stray |= {seq for seq, r in records.items() if r.kind not in plan.kinds}
    # A seq neither in `out` nor in `records` was deleted between the KNN and the fetch.
    ranked = [
        (seq, similarity)
        for seq, similarity in best.items()
        if seq not in stray and (seq in out or seq in records)
    ][: plan.pool]
    for seq in stray:
        out[seq] = Candidate(record=records[seq])
    for rank, (seq, similarity) in enumerate(ranked, start=1):
        candidate = out.get(seq) or out.setdefault(seq, Candidate(record=records[seq]))
        if as_feedback:
            candidate.feedback_rank, candidate.feedback_similarity = rank, similarity
        else:
            candidate.dense_rank, candidate.dense_similarity = rank, similarity
            candidate.window_similarity = scored.get(seq)
    return source


def _nearest_chunks(
    conn: apsw.Connection, plan: SearchPlan, vector: bytes | None
) -> tuple[list[tuple[int, float]], str]:
    """From the in-memory copy when it is loaded and current, else from sqlite-vec."""
    assert vector is not None and plan.embedder is not None
    k = plan.pool * CHUNKS_PER_CANDIDATE
    cache = plan.dense_cache
    if cache is not None and cache.loaded and cache.refresh(conn):
        import numpy as np

        query = np.frombuffer(vector, dtype=np.float32)
        return cache.nearest(query, plan.scopes, plan.kinds, k), "memory"
    hits = vector_sql.nearest(
        conn, plan.embedder, vector, scopes=plan.scopes, kinds=plan.kinds, k=k
    )
    return hits, "sqlite-vec"


# -- ranking (no database) -------------------------------------------------------------------


def fuse_and_boost(candidates: dict[int, Candidate], plan: SearchPlan) -> list[Candidate]:
    """Candidates that may be served, best first by fused score times boost; the others are
    marked filtered with the reason.

    The head of the list is fused from each channel's top `depth` only, and whatever only a
    deeper list found follows it: asking for more results must never reorder the first ones
    (and deep lists hurt fusion: two mediocre ranks outscore one channel's clear first)."""
    servable = [c for c in candidates.values() if _servable(c, plan)]
    depth = plan.depth or plan.pool
    head = [c for c in servable if _within(c, depth)]
    tail = [c for c in servable if not _within(c, depth)]
    fuse = _FUSERS[plan.fusion]
    # The tail first, so that the head's own fusion has the last word on its time ranks.
    tail_order = _score_part(tail, fuse(servable, plan, plan.pool), plan) if tail else []
    ordered = _score_part(head, fuse(head, plan, depth), plan) + tail_order
    for rank, candidate in enumerate(ordered, start=1):
        candidate.fused_rank = rank
    return ordered


def _within(candidate: Candidate, depth: int) -> bool:
    ranks = (candidate.lexical_rank, candidate.dense_rank, candidate.feedback_rank)
    return any(rank is not None and rank <= depth for rank in ranks)


def _score_part(
    part: list[Candidate], fused: dict[int, float], plan: SearchPlan
) -> list[Candidate]:
    if plan.feedback.thread_weight:
        fused = _with_thread_scores(part, fused, plan.feedback.thread_weight)
    for candidate in part:
        candidate.fused_score = fused.get(candidate.record.seq, 0.0)
        if plan.weights.active or plan.timeframe is not None:
            # Boosts multiply the fused score, which is always positive: a raw cosine can be
            # negative, and a boost must never push a memory down.
            candidate.boost = _boost(candidate, plan)
            candidate.final_score = candidate.fused_score * candidate.boost
        else:
            candidate.final_score = _channel_score(candidate, plan)
    return sorted(part, key=lambda c: (-c.final_score, -c.record.seq))


def _with_thread_scores(
    part: list[Candidate], fused: dict[int, float], weight: float
) -> dict[int, float]:
    """Thread aggregation (see `fusion.group_totals`): each candidate's fused score plus
    `weight` times its thread's total over `part`; a memory without a thread is its own."""
    threads = {
        c.record.seq: (c.record.scope, c.record.thread) if c.record.thread else c.record.seq
        for c in part
    }
    totals = group_totals(threads, fused)
    for candidate in part:
        candidate.thread_score = totals[candidate.record.seq]
    return fused | {seq: fused.get(seq, 0.0) + weight * totals[seq] for seq in threads}


def _rank_fuse(servable: Sequence[Candidate], plan: SearchPlan, depth: int) -> dict[int, float]:
    rankings = {
        "lexical": _order_by(servable, "lexical_rank", depth),
        "dense": _order_by(servable, "dense_rank", depth),
        "dense_feedback": _order_by(servable, "feedback_rank", depth),
    }
    fused = reciprocal_rank_fusion(rankings, plan.rrf_k)
    if plan.timeframe is not None:
        rankings["time"] = _time_ranking(servable, fused, plan.timeframe)
        fused = reciprocal_rank_fusion(rankings, plan.rrf_k)
    return fused


def _zscore_fuse(servable: Sequence[Candidate], plan: SearchPlan, depth: int) -> dict[int, float]:
    """Standardised channel scores summed, squashed into (0, 1) by the logistic function so
    that the fused score stays positive and boosts can multiply it. The time channel scores
    1 inside the asked-about span and 0 outside: it only counts where it tells candidates
    apart."""
    channels: dict[str, dict[int, float]] = {
        "lexical": {
            c.record.seq: c.lexical_score
            for c in servable
            if c.lexical_score is not None and (c.lexical_rank or 0) <= depth
        },
        "dense": {
            c.record.seq: c.dense_similarity
            for c in servable
            if c.dense_similarity is not None and (c.dense_rank or 0) <= depth
        },
        "dense_feedback": {
            c.record.seq: c.feedback_similarity
            for c in servable
            if c.feedback_similarity is not None and (c.feedback_rank or 0) <= depth
        },
    }
    if plan.timeframe is not None:
        relevance = zscore_fusion(channels)
        _time_ranking(servable, relevance, plan.timeframe)  # time ranks for explain
        channels["time"] = {
            c.record.seq: float(plan.timeframe.contains(_event_time(c))) for c in servable
        }
    return {item: logistic(score) for item, score in zscore_fusion(channels).items()}


_FUSERS = {"rrf": _rank_fuse, "zscore": _zscore_fuse}


def _event_time(candidate: Candidate) -> datetime:
    record = candidate.record
    return parse_time(record.occurred_at or record.created_at)


def _time_ranking(
    candidates: Sequence[Candidate], relevance: dict[int, float], frame: TimeFrame
) -> list[int]:
    """The time channel: candidates by how far their event time lies from the asked-about
    span (inside it first), relevance breaking ties. It only reorders what the text channels
    found; it never brings in a memory for its date alone."""

    def key(candidate: Candidate) -> tuple[float, float]:
        distance = frame.distance(_event_time(candidate)).total_seconds()
        return distance, -relevance.get(candidate.record.seq, 0.0)

    ordered = sorted(candidates, key=key)
    for rank, candidate in enumerate(ordered, start=1):
        candidate.time_rank = rank
    return [candidate.record.seq for candidate in ordered]


def _servable(candidate: Candidate, plan: SearchPlan) -> bool:
    record = candidate.record
    if plan.as_of is not None:
        if candidate.state is None:
            candidate.outcome, candidate.reason = "filtered", "did not hold true at as_of"
            return False
    elif record.status not in SEARCHABLE_STATUSES:
        candidate.outcome, candidate.reason = "filtered", f"status {record.status}"
        return False
    elif not _window_holds(record, plan.valid_at):
        candidate.outcome, candidate.reason = "filtered", "outside its validity window"
        return False
    if record.scope not in plan.scopes:
        candidate.outcome, candidate.reason = "filtered", "outside the requested scopes"
    elif plan.kinds is not None and record.kind not in plan.kinds:
        candidate.outcome, candidate.reason = "filtered", f"kind {record.kind} not requested"
    else:
        return True
    return False


def _window_holds(record: MemoryRecord, moment: str | None) -> bool:
    """Whether a memory's window contains `moment` (stored form, so text order is time
    order); a window given at remember may start later or end earlier than now."""
    if moment is None:
        return True
    started = record.valid_from is None or record.valid_from <= moment
    return started and (record.valid_until is None or moment < record.valid_until)


def _order_by(candidates: Sequence[Candidate], attribute: str, depth: int) -> list[int]:
    ranked = [c for c in candidates if (getattr(c, attribute) or depth + 1) <= depth]
    ranked.sort(key=lambda c: getattr(c, attribute))
    return [c.record.seq for c in ranked]


def _channel_score(candidate: Candidate, plan: SearchPlan) -> float:
    """Without boosts, a single channel's score keeps its meaning (bm25 or cosine); with both
    channels it is the fused reciprocal-rank score."""
    if plan.query_vector is None and candidate.lexical_score is not None:
        return candidate.lexical_score
    if plan.lexical_match is None and candidate.dense_similarity is not None:
        return candidate.dense_similarity
    return candidate.fused_score


def _boost(candidate: Candidate, plan: SearchPlan) -> float:
    record = candidate.record
    when = parse_time(record.occurred_at or record.created_at)
    return boost_factor(
        when=when,
        now=plan.now,
        importance=record.importance,
        uses=candidate.uses,
        weights=plan.weights,
    )


def rerank(
    ordered: list[Candidate], plan: SearchPlan, reranker: Any, query: str
) -> list[Candidate]:
    """Rescore the top `rerank_pool` with the cross-encoder; below the confidence floor a
    candidate is not served however well it ranked. Candidates beyond the pool were never
    judged by the reranker, so they are not served either (outcome outside_limit): the pool
    is always at least the request's limit."""
    head, tail = ordered[: plan.rerank_pool], ordered[plan.rerank_pool :]
    scores = reranker.score(query, [c.record.content for c in head])
    for candidate, score in zip(head, scores, strict=True):
        candidate.rerank_score = float(score)
    head.sort(key=lambda c: -(c.rerank_score or 0.0))
    kept: list[Candidate] = []
    for rank, candidate in enumerate(head, start=1):
        candidate.rerank_rank = rank
        candidate.final_score = candidate.rerank_score or 0.0
        if candidate.final_score < plan.min_confidence:
            candidate.outcome = "below_confidence"
            candidate.reason = f"rerank score below {plan.min_confidence}"
        else:
            kept.append(candidate)
    for candidate in tail:
        candidate.outcome, candidate.reason = "outside_limit", "beyond the rerank pool"
    return kept


def cut(ordered: list[Candidate], limit: int) -> list[Candidate]:
    for candidate in ordered[:limit]:
        candidate.outcome, candidate.reason = "returned", None
    return ordered[:limit]
