"""Reciprocal-rank fusion (Cormack et al., 2009): score = sum over channels of 1 / (k + rank).

Ranks, not scores, are fused because bm25 and cosine similarity live on unrelated scales;
k damps the advantage of the very top ranks so agreement between channels counts for more.

A candidate one channel did not return is counted as ranked just below that channel's list
(not as absent): it is at best there. Counting it as absent lets two mediocre ranks outscore
a clear first place in one channel (a paraphrase the lexical channel cannot see), which cost
LongMemEval session R_any@5 0.986 -> 0.971 and SciFact nDCG@10 0.724 -> 0.719 here.
"""

from __future__ import annotations

import math
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


def zscore_fusion(scores: Mapping[str, Mapping[int, float]]) -> dict[int, float]:
    """Score fusion: each channel's raw scores standardised over that channel's own candidates
    (mean 0, standard deviation 1), then summed with equal weight.

    Ranks throw away how far ahead a clear winner is; standardised scores keep it, so a
    memory that one channel finds far better than anything else is not outvoted by two
    middling ranks. Within a channel, standardising uses only that channel's own list, so bm25
    and cosine never have to share a scale. A candidate a channel did not return counts as
    that channel's lowest score (it is at best there, as with ranks); a channel whose scores
    are all equal says nothing about order and adds nothing.
    """
    everyone = {item for channel in scores.values() for item in channel}
    parts: dict[int, list[float]] = {item: [] for item in everyone}
    for channel in scores.values():
        standard = _standardise(channel)
        if not standard:
            continue
        floor = min(standard.values())
        for item in everyone:
            parts[item].append(standard.get(item, floor))
    return {item: math.fsum(values) for item, values in parts.items()}


def _standardise(channel: Mapping[int, float]) -> dict[int, float]:
    if not channel:
        return {}
    values = list(channel.values())  # fsum: exact, so the result does not depend on order
    mean = math.fsum(values) / len(values)
    spread = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / len(values))
    if spread == 0.0:
        return dict.fromkeys(channel, 0.0)
    return {item: (value - mean) / spread for item, value in channel.items()}


def logistic(x: float) -> float:
    """A fused z-score squashed into (0, 1), order kept: a score that is always positive, so a
    boost can multiply it, on the same scale wherever z-score fusion is used."""
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))
