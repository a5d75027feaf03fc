"""How far fusion alone can take LongMemEval-S session recall_any@1 with memproc's channels.

A fusion that is monotone in each channel's rank (reciprocal-rank fusion, standardised
scores, any weighting of either) can only put first a candidate that no other candidate
beats in every channel at once: a Pareto-optimal one. So the share of questions where some
gold session is Pareto-optimal over (lexical rank, dense rank, time rank) bounds R_any@1 for
every such fusion, however it is tuned; the share where a gold session is first in some
channel is what picking the right channel per question would give. Questions above the
bound need a better ranking from a channel (a stronger embedder, a reranker), not fusion.

    .venv/bin/python benchmarks/fusion_ceiling.py \
        --data /work/shared/data/longmemeval/longmemeval_s_dev.jsonl.gz --every 5

Candidates are what `memory.search` with `explain: true` considered, each channel
`candidate_pool` deep (60 here unless `--set candidate_pool=N`), through the same code path
as the service; memproc's own R_any@1 in the same run is printed beside the bounds.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

import common
import longmemeval

MISSING = float("inf")  # a channel that did not return a candidate ranks it last


def pareto_optimal(ranks: dict[str, tuple[float, ...]], item: str) -> bool:
    """No other candidate is at least as good in every channel and better in one."""
    mine = ranks[item]
    for other, theirs in ranks.items():
        if (
            other != item
            and theirs != mine
            and all(t <= m for t, m in zip(theirs, mine, strict=True))
        ):
            return False
    return True


def channel_ranks(candidate: Any) -> tuple[float, ...]:
    ranks = (candidate.lexical_rank, candidate.dense_rank, candidate.time_rank)
    return tuple(MISSING if rank is None else float(rank) for rank in ranks)


def judge_question(result: Any, corpus: longmemeval.Corpus, by_memory: dict[str, list[int]]):
    """(memproc first is gold, some channel has gold first, some gold is Pareto-optimal)."""
    gold = {i for i, doc in enumerate(corpus.ids) if doc in set(corpus.gold)}
    ranks = {c.id: channel_ranks(c) for c in result.explanation.candidates}
    gold_memories = [m for m in ranks if gold.intersection(by_memory.get(m, []))]
    first = result.results[0].id if result.results else None
    return (
        first in gold_memories,
        any(min(ranks[m]) == 1 for m in gold_memories),
        any(pareto_optimal(ranks, m) for m in gold_memories),
    )


def run(args: argparse.Namespace, entries: Sequence[dict[str, Any]]) -> list[tuple[bool, ...]]:
    embedder = common.load_embedder(args)
    runner = longmemeval.Runner(args, embedder)
    verdicts = []
    for entry in entries:
        corpus = longmemeval.session_corpus(entry)
        storable = [i for i, text in enumerate(corpus.texts) if text.strip()]
        with common.temp_db("ceiling-") as db_path:
            runtimes = common.ModeRuntimes(
                db_path, embedder, args, ["hybrid"], longmemeval.BASE_SETTINGS
            )
            try:
                items = [runner.item(corpus, i) for i in storable]
                memory_ids = common.remember_all(runtimes.writer(), longmemeval.SCOPE, items)
                by_memory = {
                    m: [storable[i] for i in idx]
                    for m, idx in common.index_memories(memory_ids).items()
                }
                result = common.memproc_search(
                    runtimes["hybrid"],
                    scope=longmemeval.SCOPE,
                    query=entry["question"],
                    limit=10,
                    mode="hybrid",
                    now=longmemeval.lme_date(entry["question_date"]),
                    explain=True,
                )
            finally:
                runtimes.close()
        verdicts.append(judge_question(result, corpus, by_memory))
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    common.add_common_args(parser)
    parser.add_argument("--data", required=True)
    args = parser.parse_args()
    args.modes = "hybrid"
    if not any(s.startswith("candidate_pool=") for s in args.set):
        args.set = [*args.set, "candidate_pool=60"]
    halved = common.in_half(longmemeval.load(args.data), args.half, key=lambda e: e["question_id"])
    entries = common.subset(halved, args.every, args.limit)
    entries = [e for e in entries if longmemeval.skip_reason(e) is None]
    verdicts = run(args, entries)
    n = len(verdicts)
    rows = [
        (label, [sum(v[column] for v in verdicts) / n])
        for column, label in enumerate(
            ("memproc hybrid", "best channel per question", "any rank-monotone fusion (bound)")
        )
    ]
    common.print_table(f"session recall_any@1 (n={n})", ["R_any@1"], rows)
    print(f"settings: {' '.join(args.set)}")


if __name__ == "__main__":
    main()
