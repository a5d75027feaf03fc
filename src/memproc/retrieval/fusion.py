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
from collections.abc import Hashable, Mapping, Sequence


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


def group_totals(groups: Mapping[int, Hashable], scores: Mapping[int, float]) -> dict[int, float]:
    """Each item's group total: the sum of the scores of the items in its group (itself
    included; an item without a score counts 0). Thread aggregation adds a fraction of it to
    each turn's fused score, so that the turns of a conversation that matches as a whole rise
    together and a lone turn that matches by chance does not."""
    totals: dict[Hashable, float] = {}
    for item, group in groups.items():
        totals[group] = totals.get(group, 0.0) + scores.get(item, 0.0)
    return {item: totals[group] for item, group in groups.items()}


def logistic(x: float) -> float:
    """A fused z-score squashed into (0, 1), order kept: a score that is always positive, so a
    boost can multiply it, on the same scale wherever z-score fusion is used."""
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


def fuse_head_first(
    lexical: Sequence[tuple[int, float]],
    dense: Sequence[tuple[int, float]],
    fusion: str,
    rrf_k: int,
    depth: int,
) -> dict[int, float]:
    """id -> fused score, best first, for two channels given as (id, score) lists best first
    (lexical scores higher-is-better, as the memory pipeline negates bm25; dense cosines).

    The rule every search here follows: the head is fused from each channel's top `depth`
    (the candidate pool), and what only a deeper list found follows it, so asking for more
    results never reorders the first ones. `fusion` is "rrf" (ranks, with `rrf_k`) or
    "zscore" (standardised scores squashed into (0, 1) by `logistic`)."""
    head_ids = {i for i, _ in lexical[:depth]} | {i for i, _ in dense[:depth]}
    head = _fuse_two(lexical[:depth], dense[:depth], fusion, rrf_k)
    tail = {
        i: score
        for i, score in _fuse_two(lexical, dense, fusion, rrf_k).items()
        if i not in head_ids
    }
    return {i: part[i] for part in (head, tail) for i in sorted(part, key=lambda i: (-part[i], -i))}


def _fuse_two(
    lexical: Sequence[tuple[int, float]],
    dense: Sequence[tuple[int, float]],
    fusion: str,
    rrf_k: int,
) -> dict[int, float]:
    if fusion == "zscore":
        channels = {"lexical": dict(lexical), "dense": dict(dense)}
        return {i: logistic(score) for i, score in zscore_fusion(channels).items()}
    rankings = {"lexical": [i for i, _ in lexical], "dense": [i for i, _ in dense]}
    return reciprocal_rank_fusion(rankings, rrf_k)
