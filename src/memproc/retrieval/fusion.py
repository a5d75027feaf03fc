"""Reciprocal-rank fusion (Cormack et al., 2009): score = sum over channels of 1 / (k + rank).

Ranks, not scores, are fused because bm25 and cosine similarity live on unrelated scales;
k damps the advantage of the very top ranks so agreement between channels counts for more.

A candidate one channel did not return is counted as ranked just below that channel's list
(not as absent): it is at best there. Counting it as absent lets two mediocre ranks outscore
a clear first place in one channel (a paraphrase the lexical channel cannot see), which cost
LongMemEval session R_any@5 0.986 -> 0.971 and SciFact nDCG@10 0.724 -> 0.719 here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence


def reciprocal_rank_fusion(rankings: Mapping[str, Sequence[int]], k: int) -> dict[int, float]:
    """Fused score per item; each ranking lists item ids best first (rank 1 = index 0)."""
    fused: dict[int, float] = {}
    everyone = {item for ranking in rankings.values() for item in ranking}
    for ranking in rankings.values():
        if not ranking:
            continue
        for position, item in enumerate(ranking, start=1):
            fused[item] = fused.get(item, 0.0) + 1.0 / (k + position)
        beyond = 1.0 / (k + len(ranking) + 1)
        for item in everyone.difference(ranking):
            fused[item] = fused.get(item, 0.0) + beyond
    return fused
