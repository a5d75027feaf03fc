"""SciFact (BEIR) nDCG@10 on the test split: memproc's lexical, dense and hybrid search beside
the naive baseline, and the published figures for all-MiniLM-L6-v2 (0.645) and BM25 (0.665).

A wiring check for the embedder: dense search with MiniLM int8 should land within 0.02 of
0.645. One store holds the whole corpus (title + " " + text per abstract).

    .venv/bin/python benchmarks/scifact.py --data /work/shared/data/scifact
    .venv/bin/python benchmarks/scifact.py --data /work/shared/data/scifact \
        --every 10 --modes lexical
"""

from __future__ import annotations

import argparse
import csv
import gzip
import json
import os
import time
from typing import Any

import common

PUBLISHED = {"dense": 0.645, "bm25": 0.665}  # BEIR: all-MiniLM-L6-v2 and BM25 (Elasticsearch)
SCOPE = "scifact"
SEARCH_LIMIT = 100  # BEIR drops a hit whose id equals the query id, so fetch more than 10


def load_corpus(data: str) -> tuple[list[str], list[str]]:
    """Document ids and texts (title + " " + text, as BEIR's dense models see them)."""
    ids, texts = [], []
    with gzip.open(os.path.join(data, "corpus.jsonl.gz"), "rt", encoding="utf-8") as handle:
        for line in handle:
            doc = json.loads(line)
            ids.append(str(doc["_id"]))
            texts.append((doc.get("title", "") + " " + doc["text"]).strip())
    return ids, texts


def load_queries(data: str) -> dict[str, str]:
    with open(os.path.join(data, "queries.jsonl"), encoding="utf-8") as handle:
        return {str(q["_id"]): q["text"] for q in map(json.loads, handle)}


def load_qrels(data: str, split: str) -> dict[str, dict[str, int]]:
    qrels: dict[str, dict[str, int]] = {}
    with open(os.path.join(data, "qrels", f"{split}.tsv"), encoding="utf-8") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = int(row["score"])
    return qrels


def drop_self(query_id: str, ranked: list[str]) -> list[str]:
    """BEIR's evaluate(ignore_identical_ids=True): a document with the query's id is removed."""
    return [doc for doc in ranked if doc != query_id]


def ingest(runtimes: common.ModeRuntimes, texts: list[str], timings: common.Timings) -> list[str]:
    items = [{"kind": "fact", "content": text} for text in texts]
    started = time.perf_counter()
    memory_ids = common.remember_all(runtimes.writer(), SCOPE, items)
    common.log(f"memproc ingested {len(items)} abstracts in {time.perf_counter() - started:.1f} s")
    return memory_ids


def run_memproc(
    args: argparse.Namespace,
    embedder: common.CachingEmbedder,
    doc_ids: list[str],
    texts: list[str],
    queries: list[tuple[str, str]],
    timings: common.Timings,
    notes: common.ModeNotes,
) -> dict[str, dict[str, list[str]]]:
    """Per mode, per query id: the ranked document ids memproc returned."""
    modes = common.parse_modes(args.modes, args.variant)
    runs: dict[str, dict[str, list[str]]] = {}
    with common.store_targets("scifact-", args.server_url) as targets:
        for store_label, db in targets:
            runtimes = common.ModeRuntimes(db, embedder, args, modes)
            try:
                by_memory = common.index_memories(ingest(runtimes, texts, timings))
                common.warm_queries(embedder, [text for _, text in queries])
                for mode in modes:
                    system = mode + store_label
                    runs[system] = {}
                    for query_id, text in queries:
                        with timings.measure(f"memproc {system} search"):
                            result = common.memproc_search(
                                runtimes[mode],
                                scope=SCOPE,
                                query=text,
                                limit=SEARCH_LIMIT,
                                mode=common.search_mode(mode),
                            )
                        notes.record(mode, result)
                        ranking = common.expand_hits([h.id for h in result.results], by_memory)
                        runs[system][query_id] = [doc_ids[i] for i in ranking]
            finally:
                runtimes.close()
    return runs


def run_baseline(
    embedder: common.CachingEmbedder,
    doc_ids: list[str],
    texts: list[str],
    queries: list[tuple[str, str]],
    timings: common.Timings,
) -> dict[str, dict[str, list[str]]]:
    started = time.perf_counter()
    index = common.NaiveIndex(texts, embedder, depth=SEARCH_LIMIT)
    common.log(f"baseline indexed {len(texts)} abstracts in {time.perf_counter() - started:.1f} s")
    runs: dict[str, dict[str, list[str]]] = {}
    for system in common.BASELINE_SYSTEMS:
        runs[system] = {}
        for query_id, text in queries:
            with timings.measure(f"{system} search"):
                ranking = index.rank(system, text)
            runs[system][query_id] = [doc_ids[i] for i in ranking]
    return runs


def score(
    runs: dict[str, dict[str, list[str]]], qrels: dict[str, dict[str, int]]
) -> dict[str, float]:
    return {
        system: common.mean(
            common.beir_ndcg(drop_self(qid, ranked), qrels[qid], 10)
            for qid, ranked in per_query.items()
        )
        for system, per_query in runs.items()
    }


def published_for(system: str) -> float | None:
    if system.endswith("dense"):
        return PUBLISHED["dense"]
    if system.endswith("lexical") or system.endswith("bm25"):
        return PUBLISHED["bm25"]
    return None


def report(scores: dict[str, float], labels: dict[str, str]) -> None:
    rows: list[tuple[str, list[Any]]] = []
    for system, value in scores.items():
        reference = published_for(system)
        if reference is None:
            rows.append((labels.get(system, system), [value, "", ""]))
        else:
            rows.append((labels.get(system, system), [value, reference, value - reference]))
    common.print_table("system", ["nDCG@10", "published", "difference"], rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="the scifact folder")
    parser.add_argument("--split", default="test")
    common.add_common_args(parser)
    parser.set_defaults(modes="lexical,dense,hybrid")  # no dates here: boosts would be moot
    args = parser.parse_args()
    started = time.perf_counter()

    doc_ids, texts = load_corpus(args.data)
    all_queries, qrels = load_queries(args.data), load_qrels(args.data, args.split)
    judged = [(qid, all_queries[qid]) for qid in qrels if qid in all_queries]
    queries = common.subset(
        common.in_half(judged, args.half, key=lambda q: q[0]), args.every, args.limit
    )
    embedder = common.load_embedder(args)
    timings, notes = common.Timings(), common.ModeNotes()

    with common.postgres_server(args.store) as args.server_url:
        runs = run_memproc(args, embedder, doc_ids, texts, queries, timings, notes)
    if not args.no_baseline:
        runs |= run_baseline(embedder, doc_ids, texts, queries, timings)

    print(
        f"SciFact {args.split}: {len(doc_ids)} abstracts, queries: "
        f"{common.describe_subset(len(judged), len(queries), args.every, args.limit, args.half)}"
    )
    print(f"embedder: {embedder.name}; remember_batch: {common.has_remember_batch()}\n")
    labels = common.store_labels(notes, common.parse_modes(args.modes, args.variant))
    report(score(runs, qrels), labels)
    for line in notes.warnings():
        print("WARNING:", line)
    print("timings (per query; query vectors come from the cache, so searches exclude them):")
    print("\n".join(timings.lines()))
    print(embedder.stats.line())
    print(f"wall time: {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
