"""Reciprocal-rank fusion (Cormack et al., 2009): score = sum over channels of 1 / (k + rank).

Ranks, not scores, are fused because bm25 and cosine similarity live on unrelated scales;
k damps the advantage of the very top ranks so agreement between channels counts for more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[int]], k: int) -> dict[int, float]:
    """Fused score per item; each ranking lists item ids best first (rank 1 = index 0)."""
    fused: dict[int, float] = {}
    for ranking in rankings.values():
        for position, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + position)
    return fused
