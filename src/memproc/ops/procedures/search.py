"""`procedure.search`: the same hybrid search as memories, over current procedure versions.

Why not reuse `retrieval.pipeline` itself: it is built around memory rows (kinds, statuses,
chunks, the shared vec0 tables and the in-memory copy of memory vectors), and the lead is
reworking it. Procedures are few per scope, so this module keeps their channels small and
reuses the parts that define the search: the lexical query (`retrieval.query.lexical_match`,
the same stop words and FTS5 quoting), the same FTS5 tokenizer and bm25, the same embedder
with its query prefix, and the configured fusion (`fusion`: reciprocal ranks with `rrf_k`,
or z-scores squashed into (0, 1), from `retrieval.fusion`), with a head that the limit does
not change.
Dense scoring is an exact cosine over the scope's current versions; versions stored before
an embedder was ready are embedded on the fly (searching never writes).
"""

from __future__ import annotations

from typing import Any

from memproc.ops.context import OpContext
from memproc.ops.procedures.views import version_view
from memproc.retrieval.fusion import logistic, reciprocal_rank_fusion, zscore_fusion
from memproc.retrieval.query import lexical_match
from memproc.store import procedures as procedure_sql
from memproc.store.procedures import VersionRecord
from memproc.wire.procedure_messages import (
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
    fused = fuse(lexical, dense, config.fusion, config.rrf_k, config.candidate_pool)
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
    return SearchProceduresResult(
        results=hits, mode="lexical" if index is None else "hybrid", degraded=degraded
    )


def fuse(
    lexical: list[tuple[int, float]],
    dense: list[tuple[int, float]],
    fusion: str,
    rrf_k: int,
    depth: int,
) -> dict[int, float]:
    """seq -> fused score, best first, by the configured fusion (`rrf` or `zscore`) as memory
    search fuses. The head is fused from each channel's top `depth` (the candidate pool), and
    what only a deeper list found (a limit above the pool) follows it: asking for more
    results never reorders the first ones."""
    head_seqs = {seq for seq, _ in lexical[:depth]} | {seq for seq, _ in dense[:depth]}
    head = _fused(lexical[:depth], dense[:depth], fusion, rrf_k)
    tail = {
        seq: score
        for seq, score in _fused(lexical, dense, fusion, rrf_k).items()
        if seq not in head_seqs
    }
    return {
        seq: part[seq]
        for part in (head, tail)
        for seq in sorted(part, key=lambda seq: (-part[seq], -seq))
    }


def _fused(
    lexical: list[tuple[int, float]], dense: list[tuple[int, float]], fusion: str, rrf_k: int
) -> dict[int, float]:
    if fusion == "zscore":
        # bm25 is lower for better matches: negated, like the memory pipeline's lexical score.
        channels = {
            "lexical": {seq: -score for seq, score in lexical},
            "dense": dict(dense),
        }
        return {seq: logistic(score) for seq, score in zscore_fusion(channels).items()}
    rankings = {"lexical": [s for s, _ in lexical], "dense": [s for s, _ in dense]}
    return reciprocal_rank_fusion(rankings, rrf_k)


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
