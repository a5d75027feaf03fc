"""For `memory.search` with `explain`: how thread neighbours took part in each match.

A threaded memory's index entry holds its neighbours' text (see store/threads.py), so a hit
may owe its rank to words its neighbours said. The lexical channel is probed again with the
query restricted to the memory's own columns and to its neighbours' columns; for the dense
channel, the memory's stored chunk vectors are scored against the query and the best one is
named by the part it was made from. Read in the search's own snapshot.
"""

from __future__ import annotations

from typing import Any

import apsw

from memproc.retrieval.indexing import ChunkPart, chunk_parts
from memproc.retrieval.pipeline import Candidate, SearchPlan
from memproc.store import memories as memory_sql
from memproc.store import threads as thread_sql
from memproc.store import vectors as vector_sql
from memproc.wire.messages import ThreadMatch


def thread_matches(
    conn: apsw.Connection, plan: SearchPlan, candidates: dict[int, Candidate], embedder: Any
) -> dict[int, ThreadMatch]:
    """Per candidate seq whose entry holds neighbours, what its neighbours contributed."""
    found = thread_sql.neighbours(conn, list(candidates))
    if not found:
        return {}
    lexical_seqs = [seq for seq in found if candidates[seq].lexical_rank is not None]
    sources: dict[int, memory_sql.MatchSource] = {}
    if plan.lexical_match is not None:
        sources = memory_sql.match_sources(conn, plan.lexical_match, lexical_seqs)
    matches = {}
    for seq, neighbours in found.items():
        dense = None
        if candidates[seq].dense_rank is not None and embedder is not None:
            dense = _best_chunk(conn, plan, candidates[seq], embedder)
        matches[seq] = ThreadMatch(
            before=neighbours.before,
            after=neighbours.after,
            lexical=sources.get(seq),
            dense_chunk=dense,
        )
    return matches


def _best_chunk(
    conn: apsw.Connection, plan: SearchPlan, candidate: Candidate, embedder: Any
) -> ChunkPart | None:
    """The part of the entry whose chunk is nearest the query; None if the stored vectors
    no longer line up with the entry (it changed since they were made). "window" too when
    the window scored at query time (`thread_query_windows`) beat the memory's own chunks:
    then its dense similarity is the window's."""
    import numpy as np

    assert plan.embedder is not None and plan.query_vector is not None
    window = candidate.window_similarity
    if window is not None and window >= (candidate.dense_similarity or -1.0):
        return "window"
    stored = vector_sql.chunk_vectors(conn, plan.embedder, candidate.record.seq)
    seq = candidate.record.seq
    parts = chunk_parts(
        embedder,
        candidate.record.content,
        memory_sql.context_of(conn, seq),
        thread_sql.thread_text(conn, seq),
    )
    if len(stored) != len(parts):  # windows unembedded (the default): the other parts
        parts = [part for part in parts if part[0] != "window"]
    if not stored or len(stored) != len(parts):
        return None
    query = np.frombuffer(plan.query_vector, dtype=np.float32)
    matrix = np.stack([np.frombuffer(vector, dtype=np.float32) for vector in stored])
    norms = np.linalg.norm(matrix, axis=1) * max(float(np.linalg.norm(query)), 1e-12)
    similarities = matrix @ query / np.maximum(norms, 1e-12)
    return parts[int(np.argmax(similarities))][0]
