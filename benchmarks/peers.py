"""Side by side with the peers (issue 12): memproc, engram and mcp-memory-service on LoCoMo.

memproc, engram-memory-system 0.8.1 and mcp-memory-service 12.4.0 on the same LoCoMo
conversations and questions, in one run.

memproc is driven as a coding agent's harness drives it: `memproc serve` on a fresh database
per conversation, a `ping` and a hybrid `memory.search` written the moment it is spawned, then
every turn stored with one `memory.remember` call at a time ("speaker: text", the session's
date as `occurred_at`, the session key as `source.session`), then every category 1-4 question
that has evidence searched (`memory.search`, hybrid, limit 10, `now` = the last session's date).
One request is in flight at a time, and each latency runs from the request's write to the
moment its response line is read.

The peers are measured by their own scripts in `../shared/peers` (standard library only), run
from here as child processes, when they are installed in PEERS_DIR (`benchmarks/setup_peers.sh`):
conversation by conversation, memproc first and then each peer on a data file holding that
conversation alone, with the same `--max-q`; their JSON reports are read back into one table.
Neither peer is a dependency of memproc, and nothing here runs in `make test`.

Figures, as the peers' scripts define them:
- init: spawn to the first response (memproc: `ping`; engram: `operations`; mcp-memory-service:
  `initialize`, which it answers once storage and model are loaded).
- first search: spawn to the first search's answer (memproc: on the empty store, sent at
  spawn; engram: spawn -> operations -> status -> first question, summed; mcp-memory-service:
  on the empty store, after `initialize` and `tools/list`).
- ingest/s: memories stored per second (memproc and mcp-memory-service: sequential calls,
  wall time; engram: its Python store API with batched embedding, which favours engram).
  memproc answers a remember once its row commits and embeds it after, so its time runs until
  a dense search that waits for every vector has been answered: memories searchable by
  meaning per second (the JSON report also holds the acknowledged rate, `answered_per_s`).
- search p50/p95: per search, by linear interpolation over every search of the run
  (mcp-memory-service's reports hold no per-search latencies: the median of its conversations'
  p50s, and the largest p95).
- peak RSS: VmHWM of the serving process from /proc (mcp-memory-service: with its children).
- recall@10: per question |evidence dia_ids in the top 10| / |evidence dia_ids| (evidence split
  on ";" and whitespace, none dropped), averaged over questions.
- 1-min load: the machine's load average at the start and end of each system's part, averaged:
  the machine is shared, and a figure taken under a load of 6 on 2 cores reads differently.

    .venv/bin/python benchmarks/peers.py --data ../shared/data/locomo/locomo_dev.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from locomo import locomo_date

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO / "tests" / "contract"), str(REPO / "tests" / "stress")]
from client import clean_env  # noqa: E402  (the contract client, as the stress drivers use it)
from timed_client import TimedClient  # noqa: E402

import peer_reports  # noqa: E402

SCOPE = "locomo"
TOP_K = 10
CATEGORIES = (1, 2, 3, 4)
# The first search on the empty store: no LoCoMo question, as mcp-memory-service's probe.
PROBE = "what did we talk about last week?"
FIRST_SEARCH_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 60.0


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- data --------------------------------------------------------------------------------------


@dataclass
class Turn:
    dia_id: str
    content: str
    session: str
    occurred_at: str


@dataclass
class Question:
    category: int
    text: str
    gold: set[str]


@dataclass
class Conversation:
    sample_id: str
    turns: list[Turn]
    questions: list[Question]
    last_date: str


def session_keys(conv: dict[str, Any]) -> list[str]:
    keys = [k for k, v in conv.items() if k.startswith("session_") and isinstance(v, list)]
    return sorted(keys, key=lambda k: int(k.split("_")[1]))


def gold_ids(qa: dict[str, Any]) -> set[str]:
    """As the peers' scripts split evidence: on ";" and whitespace, nothing dropped."""
    return {p for e in qa.get("evidence", []) for p in str(e).replace(";", " ").split()}


def load_samples(path: str, convs: int) -> list[dict[str, Any]]:
    """The first `convs` LoCoMo samples (0: all)."""
    with open(path, encoding="utf-8") as handle:
        samples = json.load(handle)
    return samples[:convs] if convs else samples


def conversation(sample: dict[str, Any], max_q: int) -> Conversation:
    conv = sample["conversation"]
    turns = [
        Turn(t["dia_id"], f"{t['speaker']}: {t['text']}", key, date)
        for key in session_keys(conv)
        for date in [locomo_date(conv[f"{key}_date_time"])]
        for t in conv[key]
    ]
    questions = [
        Question(qa["category"], qa["question"], gold_ids(qa))
        for qa in sample["qa"]
        if qa.get("category") in CATEGORIES and gold_ids(qa)
    ]
    questions = questions[:max_q] if max_q else questions
    return Conversation(sample["sample_id"], turns, questions, max(t.occurred_at for t in turns))


# -- memproc -----------------------------------------------------------------------------------


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation, as the peers' scripts compute p50/p95."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


def vm_kb(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class Memproc:
    """One `memproc serve` on a fresh database, one request in flight at a time."""

    def __init__(self, args: argparse.Namespace, work: Path, sample_id: str) -> None:
        db = work / f"{sample_id}.db"
        self.stderr_path = work / f"{sample_id}.stderr"
        argv = [sys.executable, "-m", "memproc", "serve", "--db", str(db)]
        argv += ["--models-dir", args.models_dir, "--embedder", args.model]
        self.spawned = time.monotonic()
        self.client = TimedClient(
            argv, stderr_path=self.stderr_path, env=clean_env(), name="memproc"
        )

    def send(self, method: str, params: dict[str, Any] | None = None) -> tuple[int, float]:
        """Write a request; its id and the moment it was written."""
        written = time.monotonic()
        return self.client.request(method, params), written

    def answer(self, request_id: int, timeout: float = CALL_TIMEOUT_S) -> tuple[Any, float]:
        """The result of `request_id` and the moment its line was read (on the reader thread)."""
        response = self.client.wait_for(request_id, timeout)
        if "result" not in response:
            logged = self.stderr_path.read_text(errors="replace")[-4000:]
            raise SystemExit(
                f"memproc: request {request_id} failed: {response.get('error')}\n{logged}"
            )
        return response["result"], self.client.arrived[json.dumps(request_id)]

    def call(self, method: str, params: dict[str, Any]) -> tuple[Any, float]:
        """Result and seconds from write to response."""
        request_id, written = self.send(method, params)
        result, arrived = self.answer(request_id)
        return result, arrived - written

    def peak_rss_mb(self) -> float | None:
        peak = vm_kb(self.client.proc.pid, "VmHWM")
        return None if peak is None else round(peak / 1024, 1)

    def close(self) -> int:
        try:
            return self.client.finish(timeout=CALL_TIMEOUT_S)
        finally:
            self.client.close()


def search_params(query: str, now: str | None, explain: bool = False) -> dict[str, Any]:
    params: dict[str, Any] = {"scope": SCOPE, "query": query, "limit": TOP_K, "mode": "hybrid"}
    if now is not None:
        params["now"] = now
    if explain:
        params["explain"] = True
    return params


def used_dense(result: dict[str, Any]) -> bool:
    """Served as hybrid, not degraded, and the explanation names the embedder it asked."""
    queries = (result.get("explanation") or {}).get("queries") or {}
    return result["mode"] == "hybrid" and not result["degraded"] and bool(queries.get("embedder"))


def spawn_figures(server: Memproc) -> dict[str, Any]:
    """`ping` and a hybrid search written at spawn, as a harness would; then, if that search
    went without the dense channel (the model still loading), searches until one uses it."""
    ping_id, _ = server.send("ping")
    search_id, _ = server.send("memory.search", search_params(PROBE, None, explain=True))
    _, ping_at = server.answer(ping_id, FIRST_SEARCH_TIMEOUT_S)
    result, search_at = server.answer(search_id, FIRST_SEARCH_TIMEOUT_S)
    settings = (result.get("explanation") or {}).get("settings") or {}
    figures = {
        "init_s": round(ping_at - server.spawned, 3),
        "first_search_s": round(search_at - server.spawned, 3),
        "first_search_mode": result["mode"],
        "first_search_degraded": result["degraded"],
        "first_search_dense_index": settings.get("dense_index"),
        "first_search_used_dense": used_dense(result),
    }
    deadline = server.spawned + FIRST_SEARCH_TIMEOUT_S
    while not used_dense(result) and time.monotonic() < deadline:
        request_id, _ = server.send("memory.search", search_params(PROBE, None, explain=True))
        result, search_at = server.answer(request_id)
    if not used_dense(result):
        raise SystemExit(f"memproc: no dense search within {FIRST_SEARCH_TIMEOUT_S} s of spawn")
    figures["first_dense_search_s"] = round(search_at - server.spawned, 3)
    return figures


def remember_params(turn: Turn) -> dict[str, Any]:
    return {
        "scope": SCOPE,
        "kind": "episode",
        "content": turn.content,
        "occurred_at": turn.occurred_at,
        "source": {"harness": "locomo", "session": turn.session},
    }


def ingest(server: Memproc, turns: list[Turn]) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Every turn, one `memory.remember` at a time; memory id -> its dia_ids (memproc keeps
    identical content in a scope once, so one memory may stand for several turns)."""
    by_memory: dict[str, list[str]] = {}
    per_call: list[float] = []
    created = 0
    started = time.monotonic()
    for turn in turns:
        result, seconds = server.call("memory.remember", remember_params(turn))
        per_call.append(seconds)
        created += bool(result["created"])
        by_memory.setdefault(result["id"], []).append(turn.dia_id)
    answered = time.monotonic() - started
    drain_searches = wait_until_searchable(server)
    wall = time.monotonic() - started
    return by_memory, {
        "calls": len(turns),
        "created": created,
        "wall_s": round(wall, 3),
        "memories_per_s": round(len(turns) / wall, 2),
        "answered_s": round(answered, 3),
        "answered_per_s": round(len(turns) / answered, 2),
        "drain_searches": drain_searches,
        "call_ms_p50": ms(percentile(per_call, 0.5)),
        "call_ms_p95": ms(percentile(per_call, 0.95)),
    }


def wait_until_searchable(server: Memproc) -> int:
    """A dense search waits for the vectors of every remember answered before it (memproc
    embeds after answering); repeated until one is answered with all of them. Ingest is timed
    to here, so its rate counts memories searchable by meaning, not memories acknowledged."""
    for searches in range(1, 1000):
        result, _ = server.call(
            "memory.search", {"scope": SCOPE, "query": "barrier", "mode": "dense", "limit": 1}
        )
        if not result["degraded"]:
            return searches
    raise RuntimeError("the vectors never caught up")


def ms(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds * 1000, 2)


def top_dia_ids(hits: list[dict[str, Any]], by_memory: dict[str, list[str]]) -> list[str]:
    ranked = [dia for hit in hits for dia in by_memory.get(hit["id"], ["?"])]
    return ranked[:TOP_K]


def search_all(
    server: Memproc, conv: Conversation, by_memory: dict[str, list[str]]
) -> list[dict[str, Any]]:
    rows = []
    for question in conv.questions:
        result, seconds = server.call("memory.search", search_params(question.text, conv.last_date))
        top = top_dia_ids(result["results"], by_memory)
        rows.append(
            {
                "category": question.category,
                "recall": len(question.gold & set(top)) / len(question.gold),
                "latency_s": seconds,
                "mode": result["mode"],
                "degraded": result["degraded"],
            }
        )
    return rows


def run_memproc_conversation(args: argparse.Namespace, conv: Conversation, work: Path):
    load = os.getloadavg()[0]
    server = Memproc(args, work, conv.sample_id)
    try:
        entry: dict[str, Any] = {"sample_id": conv.sample_id, "turns": len(conv.turns)}
        entry |= spawn_figures(server)
        by_memory, entry["ingest"] = ingest(server, conv.turns)
        rows = search_all(server, conv, by_memory)
        entry["peak_rss_mb"] = server.peak_rss_mb()
    finally:
        entry["exit_code"] = server.close()
    entry["load_1min"] = [load, os.getloadavg()[0]]
    latencies = [r["latency_s"] for r in rows]
    entry |= {
        "questions": len(rows),
        "recall_at_10": round(statistics.mean(r["recall"] for r in rows), 4) if rows else None,
        "search_ms_p50": ms(percentile(latencies, 0.5)),
        "search_ms_p95": ms(percentile(latencies, 0.95)),
        "served_not_hybrid": sum(r["mode"] != "hybrid" or bool(r["degraded"]) for r in rows),
    }
    log(
        f"  memproc {conv.sample_id}: {len(conv.turns)} turns, {len(rows)} q, init "
        f"{entry['init_s']} s, first search {entry['first_search_s']} s, ingest "
        f"{entry['ingest']['memories_per_s']}/s, p50 {entry['search_ms_p50']} ms, recall@10 "
        f"{entry['recall_at_10']}, peak {entry['peak_rss_mb']} MB"
    )
    return entry, rows


def memproc_summary(entries: list[dict[str, Any]], rows: list[dict[str, Any]]):
    latencies = [r["latency_s"] for r in rows]
    stored = sum(e["ingest"]["calls"] for e in entries)
    ingest_s = sum(e["ingest"]["wall_s"] for e in entries)
    summary = {
        "init_s": statistics.median(e["init_s"] for e in entries),
        "first_search_s": statistics.median(e["first_search_s"] for e in entries),
        "first_dense_search_s": statistics.median(e["first_dense_search_s"] for e in entries),
        "ingest_per_s": round(stored / ingest_s, 2),
        "search_ms_p50": ms(percentile(latencies, 0.5)),
        "search_ms_p95": ms(percentile(latencies, 0.95)),
        "peak_rss_mb": max(e["peak_rss_mb"] or 0 for e in entries),
        "recall_at_10": round(statistics.mean(r["recall"] for r in rows), 4),
        "questions": len(rows),
        "served_not_hybrid": sum(e["served_not_hybrid"] for e in entries),
        "load_1min": round(statistics.mean(x for e in entries for x in e["load_1min"]), 2),
    }
    return {"conversations": entries, "summary": summary}


def run_all(args: argparse.Namespace, samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Conversation by conversation, memproc and then each peer on it: on a shared machine a
    spell of load then falls on every system alike, not on whichever ran during it."""
    peers, skipped = ([], {}) if args.skip_peers else peer_reports.installed(args)
    entries: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    reports: dict[str, list[dict[str, Any]]] = {peer.key: [] for peer in peers}
    with tempfile.TemporaryDirectory(prefix="memproc-peers-bench-") as tmp:
        work = Path(tmp)
        for sample in samples:
            conv = conversation(sample, args.max_q)
            entry, conv_rows = run_memproc_conversation(args, conv, work)
            entries.append(entry)
            rows += conv_rows
            # the peers' scripts read a data file: this conversation alone (in the temp dir)
            data = work / f"{conv.sample_id}.json"
            data.write_text(json.dumps([sample]), encoding="utf-8")
            for peer in peers:
                reports[peer.key].append(peer_reports.run_peer(peer, args, data, conv.sample_id))
    peer_figures = peer_reports.summarise(peers, reports)
    return {"memproc": memproc_summary(entries, rows), "peers": peer_figures | skipped}


# -- the run -----------------------------------------------------------------------------------


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", required=True, help="locomo_dev.json")
    parser.add_argument("--convs", type=int, default=0, help="the first N conversations (0: all)")
    parser.add_argument("--max-q", type=int, default=0, help="the first N questions each (0: all)")
    parser.add_argument(
        "--peers-dir",
        default=peer_reports.default_peers_dir(),
        help="where benchmarks/setup_peers.sh installed the peers (default: $PEERS_DIR, else "
        "<tmp>/memproc-peers); a peer not installed there is named and skipped",
    )
    parser.add_argument(
        "--peer-scripts",
        default=str(peer_reports.DEFAULT_SCRIPTS),
        help="the folder of peer_engram.py and peer_mms.py (default ../shared/peers)",
    )
    parser.add_argument("--skip-peers", action="store_true", help="measure memproc only")
    parser.add_argument("--out", default=None, help="write every figure as JSON here")
    parser.add_argument("--models-dir", default=str(REPO / ".cache" / "models"))
    parser.add_argument("--model", default="minilm-l6-int8", help="memproc's embedder")
    return parser.parse_args(argv)


def git_head() -> str:
    done = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout.strip() or "?"


def main() -> None:
    args = parse_args()
    if not (Path(args.models_dir) / args.model).is_dir():
        raise SystemExit(
            f"peers.py: no {args.model} in {args.models_dir}: "
            f".venv/bin/memproc models pull {args.model} --models-dir {args.models_dir}"
        )
    started = time.perf_counter()
    samples = load_samples(args.data, args.convs)
    convs = [conversation(sample, args.max_q) for sample in samples]
    turns = sum(len(c.turns) for c in convs)
    questions = sum(len(c.questions) for c in convs)
    log(f"{len(convs)} conversations, {turns} turns, {questions} questions")
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "memproc_commit": git_head(),
        "argv": sys.argv,
        "cpu_count": os.cpu_count(),
        "loadavg_start": os.getloadavg(),
        "conversations": [c.sample_id for c in convs],
        "turns": turns,
        "questions": questions,
    }
    report |= run_all(args, samples)
    report["loadavg_end"] = os.getloadavg()
    report["wall_s"] = round(time.perf_counter() - started, 1)
    print(f"LoCoMo: {', '.join(report['conversations'])}; {turns} turns, {questions} questions")
    load = f"{report['loadavg_start'][0]:.2f} -> {report['loadavg_end'][0]:.2f}"
    print(f"memproc {report['memproc_commit']}, {report['started']}; 1-min load {load}\n")
    peer_reports.print_tables(report)
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
