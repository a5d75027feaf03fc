"""LongMemEval-S retrieval: the official session- and turn-level metrics for memproc's lexical,
dense, hybrid and hybrid+boosts search, beside the naive baseline, per question type and
overall.

Per question, a fresh store holds its haystack and `memory.search` gets the question, with the
question date as `now`; haystack dates are the memories' `occurred_at`. Keys follow the
official run_retrieval.py: a session is its user turns joined by " "; a turn is a user turn
with id f"{session_id}_{turn_idx+1}"; evidence sessions/turns without a has_answer user turn
are renamed "noans". Abstention (*_abs) questions and questions without a has_answer user turn
are skipped, as the official averages do.

    .venv/bin/python benchmarks/longmemeval.py \
        --data /work/shared/data/longmemeval/longmemeval_s_dev.jsonl.gz \
        --every 10 --granularity both --out /tmp/lme_rows.jsonl

`--granularity session` (one store of sessions per question), `turn` (one store of user turns;
session scores come from mapping turns to sessions, as the official turn2session does) or
`both`. Turn-level recall_any@10 exists only where a turn store was built.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TextIO

import common

SCOPE = "longmemeval"
KS = (1, 3, 5, 10)
SEARCH_LIMIT = {"session": 10, "turn": 100}  # turns: enough to cover 10 distinct sessions
SESSION_COLUMNS = ("recall_any@1", "recall_any@5", "recall_any@10", "recall_all@5", "ndcg_any@10")
TURN_COLUMNS = ("turn recall_any@10", *(f"session {c}" for c in SESSION_COLUMNS))
# Sessions can be long; the point here is retrieval, not the service's default size limit.
BASE_SETTINGS = {"max_content_chars": 10_000_000}


@dataclass
class Corpus:
    """One question's haystack as the official code keys it, plus what memproc stores."""

    ids: list[str]
    texts: list[str]
    dates: list[str]  # RFC 3339
    metadata: list[dict[str, Any]]
    contexts: list[str | None] = field(default_factory=list)  # memproc's `context` per item

    @property
    def gold(self) -> list[str]:
        return sorted({doc for doc in self.ids if "answer" in doc})


def lme_date(text: str) -> str:
    """'2023/05/20 (Sat) 00:31' -> '2023-05-20T00:31:00Z' (the data carries no zone)."""
    moment = datetime.strptime(text[:10] + " " + text[-5:], "%Y/%m/%d %H:%M")
    return moment.strftime("%Y-%m-%dT%H:%M:00Z")


def user_turns(session: list[dict[str, Any]]) -> Iterator[tuple[int, dict[str, Any]]]:
    return ((i, turn) for i, turn in enumerate(session) if turn["role"] == "user")


def session_corpus(entry: dict[str, Any]) -> Corpus:
    corpus = Corpus([], [], [], [])
    for sid, session, date in _haystack(entry):
        turns = [turn for _, turn in user_turns(session)]
        doc_id = sid
        if "answer" in sid and not any(t.get("has_answer") for t in turns):
            doc_id = sid.replace("answer", "noans")
        corpus.ids.append(doc_id)
        corpus.texts.append(" ".join(t["content"] for t in turns))
        corpus.dates.append(lme_date(date))
        corpus.metadata.append({"session_id": sid, "date": date, "turns": len(turns)})
    return corpus


def turn_corpus(entry: dict[str, Any], context_turns: int = 1) -> Corpus:
    """User turns, each with the user turns before it in its session as memproc's context."""
    corpus = Corpus([], [], [], [])
    for sid, session, date in _haystack(entry):
        earlier: list[str] = []
        for index, turn in user_turns(session):
            corpus.contexts.append("\n".join(earlier[-context_turns:]) if context_turns else None)
            earlier.append(turn["content"])
            doc_id = f"{sid}_{index + 1}"
            if "answer" in sid and not turn.get("has_answer"):
                doc_id = doc_id.replace("answer", "noans")
            corpus.ids.append(doc_id)
            corpus.texts.append(turn["content"])
            corpus.dates.append(lme_date(date))
            corpus.metadata.append({"session_id": sid, "turn_index": index, "date": date})
    return corpus


def _haystack(entry: dict[str, Any]) -> Iterator[tuple[str, list[dict[str, Any]], str]]:
    return zip(
        entry["haystack_session_ids"],
        entry["haystack_sessions"],
        entry["haystack_dates"],
        strict=True,
    )


def skip_reason(entry: dict[str, Any]) -> str | None:
    if "_abs" in entry["question_id"]:
        return "abstention"
    has_answer = any(
        turn.get("has_answer")
        for session in entry["haystack_sessions"]
        for _, turn in user_turns(session)
    )
    return None if has_answer else "no has_answer user turn"


# -- retrieval -------------------------------------------------------------------------------


class Runner:
    """Runs every system on one question's corpus and returns rankings of corpus indices."""

    def __init__(self, args: argparse.Namespace, embedder: common.CachingEmbedder) -> None:
        self.args = args
        self.embedder = embedder
        self.modes = common.parse_modes(args.modes, args.variant)
        self.timings = common.Timings()
        self.notes = common.ModeNotes()
        self.empty_skipped = 0
        self.duplicates = 0

    def memproc(
        self, corpus: Corpus, entry: dict[str, Any], granularity: str
    ) -> dict[str, list[int]]:
        storable = [i for i, text in enumerate(corpus.texts) if text.strip()]
        self.empty_skipped += len(corpus.texts) - len(storable)
        items = [self.item(corpus, i) for i in storable]
        rankings: dict[str, list[int]] = {}
        with common.temp_db("lme-") as db_path:
            runtimes = common.ModeRuntimes(
                db_path, self.embedder, self.args, self.modes, BASE_SETTINGS
            )
            try:
                with self.timings.measure(f"memproc ingest ({granularity}, per question)"):
                    memory_ids = common.remember_all(runtimes.writer(), SCOPE, items)
                self.duplicates += len(memory_ids) - len(set(memory_ids))
                by_memory = {
                    m: [storable[i] for i in idx]
                    for m, idx in common.index_memories(memory_ids).items()
                }
                common.warm_queries(self.embedder, [entry["question"]])
                for mode in self.modes:
                    rankings[mode] = self._search(runtimes[mode], mode, entry, granularity)
                    rankings[mode] = common.expand_hits(rankings.pop(mode), by_memory)
            finally:
                runtimes.close()
        return rankings

    def item(self, corpus: Corpus, index: int) -> dict[str, Any]:
        return {
            "kind": "episode",
            "content": corpus.texts[index],
            **({"context": corpus.contexts[index]} if self._context(corpus, index) else {}),
            "metadata": corpus.metadata[index],
            "occurred_at": corpus.dates[index],
            "source": {"harness": "longmemeval", "session": corpus.metadata[index]["session_id"]},
        }

    @staticmethod
    def _context(corpus: Corpus, index: int) -> str | None:
        return corpus.contexts[index] if index < len(corpus.contexts) else None

    def _search(self, runtime: Any, mode: str, entry: dict[str, Any], granularity: str) -> Any:
        with self.timings.measure(f"memproc {mode} search ({granularity})"):
            result = common.memproc_search(
                runtime,
                scope=SCOPE,
                query=entry["question"],
                limit=SEARCH_LIMIT[granularity],
                mode=common.search_mode(mode),
                now=lme_date(entry["question_date"]),
            )
        self.notes.record(mode, result)
        return [hit.id for hit in result.results]

    def baseline(self, corpus: Corpus, entry: dict[str, Any], granularity: str):
        with self.timings.measure(f"naive index ({granularity}, per question)"):
            index = common.NaiveIndex(corpus.texts, self.embedder, SEARCH_LIMIT[granularity])
        rankings: dict[str, list[int]] = {}
        for system in common.BASELINE_SYSTEMS:
            with self.timings.measure(f"{system} search ({granularity})"):
                rankings[system] = index.rank(system, entry["question"])
        return rankings


# -- scoring ---------------------------------------------------------------------------------


def score(ranking: list[int], corpus: Corpus, granularity: str) -> dict[str, float]:
    """The official metrics at KS. With turn granularity, "turn ..." keys are the turn-level
    scores and "session ..." keys the turn2session ones."""
    metrics: dict[str, float] = {}
    for k in KS:
        any_, all_, ndcg = common.lme_evaluate(ranking, corpus.gold, corpus.ids, k)
        prefix = "" if granularity == "session" else "turn "
        metrics |= {
            f"{prefix}recall_any@{k}": any_,
            f"{prefix}recall_all@{k}": all_,
            f"{prefix}ndcg_any@{k}": ndcg,
        }
        if granularity == "turn":
            any_, all_, ndcg = common.lme_evaluate_turn2session(ranking, corpus.gold, corpus.ids, k)
            metrics |= {
                f"session recall_any@{k}": any_,
                f"session recall_all@{k}": all_,
                f"session ndcg_any@{k}": ndcg,
            }
    return metrics


def write_rows(
    out: TextIO | None,
    entry: dict[str, Any],
    granularity: str,
    corpus: Corpus,
    rankings: dict[str, list[int]],
    scores: dict[str, dict[str, float]],
) -> None:
    if out is None:
        return
    for system, ranking in rankings.items():
        row = {
            "question_id": entry["question_id"],
            "question_type": entry["question_type"],
            "granularity": granularity,
            "system": system,
            "metrics": scores[system],
            "gold": corpus.gold,
            "top10": [corpus.ids[i] for i in ranking[:10]],
        }
        out.write(json.dumps(row) + "\n")


def aggregate(
    results: list[tuple[str, str, str, dict[str, float]]], granularity: str, qtype: str | None
) -> dict[str, dict[str, float]]:
    """system -> metric -> mean over the questions of `qtype` (None: all)."""
    chosen: dict[str, list[dict[str, float]]] = {}
    for gran, question_type, system, metrics in results:
        if gran == granularity and (qtype is None or question_type == qtype):
            chosen.setdefault(system, []).append(metrics)
    return {
        system: {key: common.mean(m[key] for m in rows) for key in rows[0]}
        for system, rows in chosen.items()
    }


def report(results: list[tuple[str, str, str, dict[str, float]]], runner: Runner, args) -> None:
    columns = {"session": SESSION_COLUMNS, "turn": TURN_COLUMNS}
    types = sorted({qtype for _, qtype, _, _ in results})
    for granularity in granularities(args.granularity):
        counts = {t: sum(1 for g, q, s, _ in results if g == granularity and q == t) for t in types}
        n_systems = len({s for g, _, s, _ in results if g == granularity}) or 1
        for qtype in [None, *types]:
            table = aggregate(results, granularity, qtype)
            n = sum(counts.values()) if qtype is None else counts[qtype]
            title = f"[{granularity}] {qtype or 'overall'} (n={n // n_systems})"
            rows = [
                (label_of(system, runner), [table[system][c] for c in columns[granularity]])
                for system in table
            ]
            common.print_table(title, columns[granularity], rows)


def label_of(system: str, runner: Runner) -> str:
    return runner.notes.label(system) if common.is_memproc(system) else system


def granularities(choice: str) -> list[str]:
    return ["session", "turn"] if choice == "both" else [choice]


def load(path: str) -> list[dict[str, Any]]:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="longmemeval_s_dev.jsonl.gz")
    parser.add_argument("--granularity", choices=["session", "turn", "both"], default="both")
    parser.add_argument("--out", default=None, help="per-question rows (JSONL)")
    parser.add_argument(
        "--turn-context",
        type=int,
        default=1,
        help="turn granularity: memproc keys each user turn with N user turns before it",
    )
    common.add_common_args(parser)
    args = parser.parse_args()
    started = time.perf_counter()

    entries = load(args.data)
    halved = common.in_half(entries, args.half, key=lambda e: e["question_id"])
    picked = common.subset(halved, args.every, args.limit)
    kept = [e for e in picked if skip_reason(e) is None]
    skipped: dict[str, int] = {}
    for entry in picked:
        reason = skip_reason(entry)
        if reason is not None:
            skipped[reason] = skipped.get(reason, 0) + 1

    embedder = common.load_embedder(args)
    runner = Runner(args, embedder)
    results: list[tuple[str, str, str, dict[str, float]]] = []
    out = open(args.out, "w", encoding="utf-8") if args.out else None  # noqa: SIM115
    try:
        for number, entry in enumerate(kept, start=1):
            for granularity in granularities(args.granularity):
                corpus = (
                    session_corpus(entry)
                    if granularity == "session"
                    else turn_corpus(entry, args.turn_context)
                )
                rankings = runner.memproc(corpus, entry, granularity)
                if not args.no_baseline:
                    rankings |= runner.baseline(corpus, entry, granularity)
                scores = {s: score(r, corpus, granularity) for s, r in rankings.items()}
                write_rows(out, entry, granularity, corpus, rankings, scores)
                results += [(granularity, entry["question_type"], s, m) for s, m in scores.items()]
            if number % 5 == 0 or number == len(kept):
                elapsed = time.perf_counter() - started
                common.log(
                    f"{number}/{len(kept)} questions, {elapsed:.0f} s; " + embedder.stats.line()
                )
    finally:
        if out is not None:
            out.close()

    used = common.describe_subset(len(entries), len(picked), args.every, args.limit, args.half)
    print(f"LongMemEval-S dev: questions {used}; scored {len(kept)}, skipped {skipped or 'none'}")
    boosts = common.runtime_settings("hybrid+boosts", args)
    print(
        f"embedder: {embedder.name}; remember_batch: {common.has_remember_batch()}; "
        f"granularity: {args.granularity}; hybrid+boosts settings: {boosts}"
    )
    print()
    report(results, runner, args)
    for line in runner.notes.warnings():
        print("WARNING:", line)
    if runner.duplicates or runner.empty_skipped:
        print(
            f"note: {runner.duplicates} corpus items merged by memproc's duplicate-content "
            f"rule (scored at the shared memory's rank); {runner.empty_skipped} empty texts "
            "not stored"
        )
    print("timings (query vectors come from the cache, so searches exclude them):")
    print("\n".join(runner.timings.lines()))
    print(embedder.stats.line())
    if args.out:
        print(f"rows: {args.out}")
    print(f"wall time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
