"""`memory.search`: hybrid retrieval with an optional reranker and an explanation.

Choosing the channels is this module's job: lexical always works; dense needs the embedder
(a missing one degrades hybrid to lexical, and says so, but refuses dense outright); rerank
needs the reranker. The pipeline itself lives in `memproc.retrieval.pipeline`.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from memproc.clock import now_rfc3339
from memproc.errors import NotReady
from memproc.ops.context import OpContext
from memproc.ops.memories.views import hit_view
from memproc.ops.thread_matches import thread_matches
from memproc.ops.validation import normalize_time
from memproc.retrieval import pipeline
from memproc.retrieval.boosts import BoostWeights, parse_time
from memproc.retrieval.indexing import VectorIndex
from memproc.retrieval.pipeline import Candidate, FeedbackPlan, SearchPlan
from memproc.retrieval.query import lexical_match
from memproc.retrieval.timeframe import find_timeframe
from memproc.store import vectors as vector_sql
from memproc.store.annotations import Annotation, annotate
from memproc.wire.messages import (
    CandidateExplanation,
    ChannelQueries,
    Explanation,
    SearchParams,
    SearchResult,
    StageRanks,
    ThreadMatch,
)


def search(ctx: OpContext, params: SearchParams) -> SearchResult:
    scopes = ctx.runtime.scopes.resolve_many(params.scope, params.scopes)
    as_of = _as_of(params)
    index, degraded = _dense_channel(ctx, params.mode)
    if as_of is not None and index is not None and degraded is None:
        degraded = HISTORY_NOT_DENSE
    mode = "lexical" if params.mode == "hybrid" and index is None else params.mode
    reranker = _reranker(ctx) if params.rerank else None
    query_text = None if index is None else index.embedder.manifest.query_prefix + params.query
    query_vector = None if index is None else index.embedder.embed_queries([params.query])[0]
    ctx.token.check()
    store = ctx.runtime.store()
    with store.reading(ctx.token) as conn:
        embedder_row = None if index is None else index.find_row(conn)
        plan = _plan(ctx, params, scopes, mode, embedder_row, query_vector, as_of)
        gathered = pipeline.gather(conn, plan)
        # In the same snapshot as the candidates: challenges and refs no longer active.
        annotations = annotate(conn, [c.record for c in gathered.candidates.values()])
        threads = {}
        if params.explain:
            embedder = None if index is None else index.embedder
            threads = thread_matches(conn, plan, gathered.candidates, embedder)
    candidates = gathered.candidates
    ordered = pipeline.fuse_and_boost(candidates, plan)
    if reranker is not None:
        ctx.token.check()
        ordered = pipeline.rerank(ordered, plan, reranker, params.query)
    returned = pipeline.cut(ordered, params.limit)
    if params.reinforce and returned:
        with store.writing(ctx.token) as conn:
            vector_sql.record_access(conn, [c.record.seq for c in returned], "search", True)
    explanation = None
    if params.explain:
        explanation = _explain(plan, gathered, query_text, index, reranker, mode, threads)
    return SearchResult(
        results=[_hit(c, annotations[c.record.seq]) for c in returned],
        mode=mode,
        degraded=degraded,
        explanation=explanation,
    )


# Said in `degraded` when `as_of` (or `include_superseded`) meets the dense channel: vectors
# leave a memory with its status change, so one superseded or invalidated since is found by
# its words only.
HISTORY_NOT_DENSE = (
    "memories superseded or invalidated since as_of have no vectors: "
    "the lexical channel only finds them"
)


def _as_of(params: SearchParams) -> str | None:
    """The moment asked about, stored form; None (now, by status: the fast path) unless
    `as_of` is given or history is asked for (which answers as of now)."""
    as_of = normalize_time(params.as_of, "$.params.as_of")
    if as_of is None and params.include_superseded:
        return now_rfc3339()
    return as_of


def _dense_channel(ctx: OpContext, mode: str) -> tuple[VectorIndex | None, str | None]:
    if mode == "lexical":
        return None, None
    wait_s = ctx.runtime.config.model_wait_s
    index = ctx.runtime.vectors.vector_index(wait_s, required=True)
    if index is not None:
        if not ctx.runtime.vectors.caught_up(wait_s):
            return index, "recent memories are still being embedded: not in the dense channel yet"
        return index, None
    if mode == "dense":
        raise NotReady("dense search needs an embedder; none is installed", retryable=False)
    return None, "no embedder installed: lexical results only"


def _reranker(ctx: OpContext) -> Any:
    reranker = ctx.runtime.models.get("reranker", ctx.runtime.config.model_wait_s)
    if reranker is None:
        raise NotReady("rerank needs a reranker; none is installed", retryable=False)
    return reranker


def _plan(
    ctx: OpContext,
    params: SearchParams,
    scopes: list[str],
    mode: str,
    embedder_row: vector_sql.EmbedderRow | None,
    query_vector: Any,
    as_of: str | None,
) -> SearchPlan:
    config = ctx.runtime.config
    now_text = normalize_time(params.now, "$.params.now")
    now = datetime.now(UTC) if now_text is None else parse_time(now_text)
    frame = find_timeframe(params.query, now) if config.time_awareness else None
    return SearchPlan(
        scopes=scopes,
        kinds=None if params.kinds is None else list(params.kinds),
        limit=params.limit,
        lexical_match=(
            None
            if mode == "dense"
            else lexical_match(params.query, frame.phrase if frame else None)
        ),
        query_vector=None if query_vector is None else query_vector.tobytes(),
        embedder=embedder_row,
        dense_cache=None if embedder_row is None else ctx.runtime.vectors.dense_cache(embedder_row),
        rrf_k=config.rrf_k,
        pool=max(config.candidate_pool, params.limit),
        depth=config.candidate_pool,
        rerank_pool=max(config.rerank_pool, params.limit),
        min_confidence=(
            config.min_confidence if params.min_confidence is None else params.min_confidence
        ),
        weights=BoostWeights(
            recency=config.recency_weight,
            half_life_days=config.recency_half_life_days,
            importance=config.importance_weight,
            access=config.access_weight,
        ),
        now=now,
        timeframe=frame,
        fusion=config.fusion,
        as_of=as_of,
        history=params.include_superseded,
        valid_at=now_rfc3339() if as_of is None else None,
        feedback=FeedbackPlan(
            lexical_docs=config.lexical_feedback_docs,
            lexical_terms=config.lexical_feedback_terms,
            lexical_weight=config.lexical_feedback_weight,
            lexical_idf=config.lexical_feedback_idf,
            dense_docs=config.dense_feedback_docs,
            dense_weight=config.dense_feedback_weight,
            dense_as=config.dense_feedback_as,
            thread_weight=config.thread_score_weight,
        ),
        query_windows=config.thread_query_windows,
    )


def _hit(candidate: Candidate, annotation: Annotation) -> Any:
    ranks = StageRanks(
        lexical=candidate.lexical_rank,
        dense=candidate.dense_rank,
        fused=candidate.fused_rank,
        rerank=candidate.rerank_rank,
    )
    return hit_view(
        candidate.record,
        score=candidate.final_score,
        ranks=ranks,
        annotation=annotation,
        status=candidate.state,
    )


def _explain(
    plan: SearchPlan,
    gathered: pipeline.Gathered,
    dense_query: str | None,
    index: VectorIndex | None,
    reranker: Any,
    mode: str,
    threads: dict[int, ThreadMatch],
) -> Explanation:
    everyone = sorted(gathered.candidates.values(), key=_explain_order)
    counts = {
        "lexical": sum(c.lexical_rank is not None for c in everyone),
        "dense": sum(c.dense_rank is not None for c in everyone),
        "dense_feedback": sum(c.feedback_rank is not None for c in everyone),
        "candidates": len(everyone),
        "reranked": sum(c.rerank_score is not None for c in everyone),
    }
    for outcome in ("returned", "below_confidence", "outside_limit", "filtered"):
        counts[outcome] = sum(c.outcome == outcome for c in everyone)
    return Explanation(
        queries=ChannelQueries(
            lexical=plan.lexical_match,
            dense=dense_query,
            embedder=None if index is None else index.embedder.name,
            reranker=None if reranker is None else reranker.name,
            timeframe=_describe_frame(plan),
            lexical_feedback=gathered.lexical_feedback,
            feedback_terms=(
                None
                if gathered.feedback_terms is None
                else {term: round(weight, 4) for term, weight in gathered.feedback_terms}
            ),
            dense_feedback_from=_ids_of(gathered, gathered.dense_feedback_from),
        ),
        settings={
            "mode": mode,
            "dense_index": gathered.dense_source,
            "fusion": plan.fusion,
            "rrf_k": plan.rrf_k,
            "candidate_pool": plan.depth,
            "gathered_per_channel": plan.pool,
            "rerank_pool": plan.rerank_pool,
            "min_confidence": plan.min_confidence,
            "boosts": {
                "recency": plan.weights.recency,
                "half_life_days": plan.weights.half_life_days,
                "importance": plan.weights.importance,
                "access": plan.weights.access,
            },
            "now": plan.now.isoformat(),
            "as_of": plan.as_of,
            "include_superseded": plan.history,
            "feedback": {
                "lexical_docs": plan.feedback.lexical_docs,
                "lexical_terms": plan.feedback.lexical_terms,
                "lexical_weight": plan.feedback.lexical_weight,
                "lexical_idf": plan.feedback.lexical_idf,
                "dense_docs": plan.feedback.dense_docs,
                "dense_weight": plan.feedback.dense_weight,
                "dense_as": plan.feedback.dense_as,
                "thread_weight": plan.feedback.thread_weight,
            },
            "thread_query_windows": plan.query_windows,
        },
        counts=counts,
        candidates=[_candidate_view(c, threads.get(c.record.seq)) for c in everyone],
    )


def _ids_of(gathered: pipeline.Gathered, seqs: list[int] | None) -> list[str] | None:
    if seqs is None:
        return None
    return [gathered.candidates[seq].record.id for seq in seqs]


def _describe_frame(plan: SearchPlan) -> str | None:
    frame = plan.timeframe
    if frame is None:
        return None
    return f"{frame.phrase!r}: [{frame.start.isoformat()}, {frame.end.isoformat()})"


_OUTCOME_ORDER = {"returned": 0, "below_confidence": 1, "outside_limit": 2, "filtered": 3}


def _explain_order(candidate: Candidate) -> tuple[int, float]:
    return _OUTCOME_ORDER[candidate.outcome], -candidate.final_score


def _candidate_view(candidate: Candidate, thread: ThreadMatch | None) -> CandidateExplanation:
    return CandidateExplanation(
        id=candidate.record.id,
        kind=candidate.record.kind,
        status=candidate.record.status,
        outcome=candidate.outcome,
        reason=candidate.reason,
        lexical_rank=candidate.lexical_rank,
        lexical_score=candidate.lexical_score,
        dense_rank=candidate.dense_rank,
        dense_similarity=candidate.dense_similarity,
        window_similarity=candidate.window_similarity,
        dense_feedback_rank=candidate.feedback_rank,
        dense_feedback_similarity=candidate.feedback_similarity,
        thread_score=candidate.thread_score,
        fused_rank=candidate.fused_rank,
        fused_score=candidate.fused_score,
        time_rank=candidate.time_rank,
        boost=candidate.boost,
        rerank_rank=candidate.rerank_rank,
        rerank_score=candidate.rerank_score,
        final_score=candidate.final_score,
        thread=thread,
    )
