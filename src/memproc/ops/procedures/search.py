"""`procedure.search`: the same hybrid search as memories, over current procedure versions.

What it shares with memory search is what defines a search here: the lexical query
(`retrieval.query.lexical_match`: the same stop words and FTS5 quoting), the same FTS5
tokenizer and bm25, the same embedder with its query prefix, the configured fusion and the
head-first rule (`retrieval.fusion.fuse_head_first`: the head fused from each channel's top
`candidate_pool`, so a larger limit never reorders the first results), and an `explain` of
the same shape. What it does not share is the memory pipeline's candidate machinery (kinds,
statuses, validity windows, chunked vectors in sqlite-vec and their in-memory copy, boosts,
the reranker): procedures are few per scope and have none of these.
Dense scoring is an exact cosine over the scope's current versions; versions stored before
an embedder was ready are embedded on the fly (searching never writes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from memproc.ops.context import OpContext
from memproc.ops.procedures.views import version_view
from memproc.retrieval.fusion import fuse_head_first
from memproc.retrieval.query import lexical_match
from memproc.store import procedures as procedure_sql
from memproc.store.procedures import VersionRecord
from memproc.wire.messages import ChannelQueries
from memproc.wire.procedure_messages import (
    ProcedureCandidateExplanation,
    ProcedureExplanation,
    ProcedureHit,
    SearchProceduresParams,
    SearchProceduresResult,
)


def search(ctx: OpContext, params: SearchProceduresParams) -> SearchProceduresResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    config = ctx.runtime.config
    index = ctx.runtime.vectors.vector_index(config.model_wait_s, required=True)
    pool = max(config.candidate_pool, params.limit)
    match = lexical_match(params.query)
    with ctx.runtime.store().reading(ctx.token) as conn:
        lexical = [] if match is None else procedure_sql.search_lexical(conn, scope, match, pool)
        current = procedure_sql.current_procedures(conn, scope) if index is not None else []
        stored = {}
        if index is not None:
            seqs = [r.seq for r in current]
            stored = procedure_sql.vectors(conn, index.fingerprint, seqs)
        records = {r.seq: r for r in current}
        records |= procedure_sql.current_by_seqs(conn, [s for s, _ in lexical if s not in records])
    dense = [] if index is None else _dense(index, params.query, current, stored)[:pool]
    # bm25 is lower for better matches: negated, as the memory pipeline's lexical score.
    lexical_scores = [(seq, -score) for seq, score in lexical]
    fused = fuse_head_first(
        lexical_scores, dense, config.fusion, config.rrf_k, config.candidate_pool
    )
    ordered = list(fused)[: params.limit]
    lexical_rank = {seq: i for i, (seq, _) in enumerate(lexical, start=1)}
    dense_rank = {seq: i for i, (seq, _) in enumerate(dense, start=1)}
    hits = [
        ProcedureHit(
            procedure=version_view(records[seq]),
            score=fused[seq],
            lexical_rank=lexical_rank.get(seq),
            dense_rank=dense_rank.get(seq),
        )
        for seq in ordered
        if seq in records
    ]
    degraded = None if index is not None else "no embedder installed: lexical results only"
    mode: Literal["lexical", "hybrid"] = "lexical" if index is None else "hybrid"
    explanation = None
    if params.explain:
        channels = _Channels(dict(lexical_scores), dict(dense), lexical_rank, dense_rank)
        explanation = _explain(
            params, config, match, index, mode, fused, ordered, records, channels
        )
    return SearchProceduresResult(
        results=hits, mode=mode, degraded=degraded, explanation=explanation
    )


@dataclass(frozen=True)
class _Channels:
    lexical: dict[int, float]
    dense: dict[int, float]
    lexical_rank: dict[int, int]
    dense_rank: dict[int, int]


def _explain(
    params: SearchProceduresParams,
    config: Any,
    match: str | None,
    index: Any,
    mode: str,
    fused: dict[int, float],
    ordered: list[int],
    records: dict[int, VersionRecord],
    channels: _Channels,
) -> ProcedureExplanation:
    """Every version a channel proposed, in fused order, with its numbers at each stage."""
    returned = set(ordered)
    depth = config.candidate_pool
    candidates = [
        ProcedureCandidateExplanation(
            id=records[seq].procedure_id,
            version_id=records[seq].id,
            outcome="returned" if seq in returned else "outside_limit",
            lexical_rank=channels.lexical_rank.get(seq),
            lexical_score=channels.lexical.get(seq),
            dense_rank=channels.dense_rank.get(seq),
            dense_similarity=channels.dense.get(seq),
            fused_rank=rank,
            fused_score=score,
            in_head=min(
                channels.lexical_rank.get(seq, depth + 1), channels.dense_rank.get(seq, depth + 1)
            )
            <= depth,
        )
        for rank, (seq, score) in enumerate(fused.items(), start=1)
        if seq in records
    ]
    return ProcedureExplanation(
        queries=ChannelQueries(
            lexical=match,
            dense=params.query if index is not None else None,
            embedder=None if index is None else index.embedder.name,
        ),
        settings={
            "mode": mode,
            "fusion": config.fusion,
            "rrf_k": config.rrf_k,
            "candidate_pool": depth,
            "limit": params.limit,
        },
        counts={
            "lexical": len(channels.lexical),
            "dense": len(channels.dense),
            "candidates": len(candidates),
            "returned": len(returned),
        },
        candidates=candidates,
    )


def _dense(
    index: Any, query: str, current: list[VersionRecord], stored: dict[int, bytes]
) -> list[tuple[int, float]]:
    """(seq, cosine) of every current version, best first."""
    if not current:
        return []
    import numpy as np

    from memproc.ops.procedures.procedures import search_text

    missing = [r for r in current if r.seq not in stored]
    if missing:
        fresh = index.embedder.embed_documents([search_text(r.name, r.body) for r in missing])
        stored = stored | {r.seq: row.tobytes() for r, row in zip(missing, fresh, strict=True)}
    # Two names, not one reassigned: numpy's stubs disagree across releases on the dtype the
    # division yields (float32 up to 2.4, float64 from 2.5), and the values are float32 anyway.
    vectors = np.stack([np.frombuffer(stored[r.seq], dtype=np.float32) for r in current])
    matrix = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    q = index.embedder.embed_queries([query])[0]
    scores = matrix @ (q / max(float(np.linalg.norm(q)), 1e-12))
    ranked = sorted(
        zip((r.seq for r in current), scores.tolist(), strict=True), key=lambda x: -x[1]
    )
    return ranked
