"""The peers' side of `peers.py`: run the measuring scripts in `../shared/peers` against the
peers installed in PEERS_DIR, read their JSON reports back, and print every system in one table.

Why the shared scripts and not a copy: they are the reference method the issue's earlier peer
figures came from (standard library only, nothing of the peers vendored), and a second copy
would drift from it. They run as child processes of this one, one conversation at a time right
after memproc's turn on it, never beside memproc: the machine has two cores.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SCRIPTS = REPO.parent / "shared" / "peers"
SETUP_HINT = "bash benchmarks/setup_peers.sh"

Figures = dict[str, Any]


def default_peers_dir() -> str:
    """Where the shared setup installs the peers unless PEERS_DIR says otherwise."""
    return os.environ.get("PEERS_DIR") or os.path.join(tempfile.gettempdir(), "memproc-peers")


# -- figures out of each peer's reports (one report per conversation) --------------------------


def median(values: Any) -> float:
    return round(statistics.median(values), 3)


def mean_load(reports: list[dict[str, Any]]) -> float:
    return round(statistics.mean(x for r in reports for x in r["bench_load"]), 2)


def engram_figures(reports: list[dict[str, Any]]) -> Figures:
    """engram's api answers `operations` at once; its first search is the first question after
    `status`, so spawn -> first search is the three added up."""
    convs = [e for r in reports for e in r["conversations"]]
    rows = [q for r in reports for q in r["per_question"]]
    latencies = [q["latency_ms"] for q in rows]
    first = [
        e["spawn_to_first_response_s"]
        + e["status_s_first_store_open"]
        + e["cold_first_search_ms"] / 1000
        for e in convs
    ]
    alone = [r["bench_one_at_a_time"] for r in reports if "bench_one_at_a_time" in r]
    return {
        "init_s": median(e["spawn_to_first_response_s"] for e in convs),
        "first_search_s": median(first),
        "ingest_per_s": per_s([e["ingest"] for e in convs], "memories", "ingest_s"),
        "ingest_one_at_a_time_per_s": per_s(alone, "memories", "ingest_s") if alone else None,
        "search_ms_p50": percentile(latencies, 0.5),
        "search_ms_p95": percentile(latencies, 0.95),
        "peak_rss_mb": max(e["api_peak_rss_mb"] for e in convs),
        "recall_at_10": round(statistics.mean(q["recall"] for q in rows), 4),
        "questions": len(rows),
        "load_1min": mean_load(reports),
        "per_conversation": [
            {
                "sample_id": e["sample_id"],
                "turns": e["turns"],
                "ingest_per_s": e["ingest"]["memories_per_s"],
                "search_ms_p50": e["search_ms_p50"],
            }
            for e in convs
        ],
    }


def per_s(parts: list[dict[str, Any]], count: str, seconds: str) -> float:
    """A rate over several runs: everything they did over all the time they took."""
    return round(sum(p[count] for p in parts) / sum(p[seconds] for p in parts), 2)


def mms_figures(reports: list[dict[str, Any]]) -> Figures:
    """mcp-memory-service's report has no per-search latencies: p50 is the median of the
    conversations' p50s and p95 the largest p95, as its own summary computes them."""
    convs = [c for r in reports for c in r["conversations"]]
    figures = {
        "init_s": median(c["init_s"] for c in convs),
        "first_search_s": median(c["first_search_s"] for c in convs),
        "ingest_per_s": per_s([c["ingest"] for c in convs], "stored", "wall_s"),
        "peak_rss_mb": max(c["rss_end"]["peak_rss_mb"] for c in convs),
        "load_1min": mean_load(reports),
        "per_conversation": [
            {
                "sample_id": c["sample_id"],
                "turns": c["turns"],
                "ingest_per_s": c["ingest"]["memories_per_s"],
                "search_ms_p50": c["modes"]["hybrid"]["search_ms_p50"],
            }
            for c in convs
        ],
    }
    figures |= mms_mode(convs, "hybrid", "")
    return figures | mms_mode(convs, "semantic", "semantic_")


def mms_mode(convs: list[dict[str, Any]], mode: str, prefix: str) -> Figures:
    modes = [c["modes"][mode] for c in convs if mode in c["modes"]]
    if not modes:
        return {}
    asked = sum(m["queries"] for m in modes)
    recall = sum(m["recall_at_k"] * m["queries"] for m in modes) / asked
    return {
        f"{prefix}search_ms_p50": median(m["search_ms_p50"] for m in modes),
        f"{prefix}search_ms_p95": max(m["search_ms_p95"] for m in modes),
        f"{prefix}recall_at_10": round(recall, 4),
        f"{prefix}questions": asked,
    }


def percentile(values: list[float], q: float) -> float | None:
    """Linear interpolation, as the peers' scripts compute p50/p95."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q
    low = int(pos)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (pos - low), 2)


# -- running them ------------------------------------------------------------------------------


def engram_one_at_a_time(script: Path, peers_dir: Path, report: dict[str, Any]) -> Figures:
    """engram's api has no remember operation, and its script ingests through the store API
    in batches of 128, which no harness storing turns as they happen can do. So its own ingest
    worker runs again on the same turn file with batches of one: the like-for-like figure."""
    (conv,) = report["conversations"]
    sample_id = conv["sample_id"]
    out = peers_dir / "engram-work" / f"{sample_id}.ingest-batch1.json"
    argv = [str(peers_dir / "engram-venv" / "bin" / "python"), str(script), "_ingest"]
    argv += ["--config", str(peers_dir / "engram-config.yaml"), "--batch", "1"]
    argv += ["--turns", str(peers_dir / "engram-work" / f"{sample_id}.turns.json")]
    argv += ["--out", str(out), "--data-dir", str(peers_dir / "engram-data")]
    with open(out.with_suffix(".stderr"), "wb") as stderr:
        subprocess.run(argv, env=engram_env(), check=True, stdout=stderr, stderr=stderr)
    figures = json.loads(out.read_text(encoding="utf-8"))
    print(f"  engram {sample_id}: one at a time {figures['memories_per_s']}/s", file=sys.stderr)
    return {key: figures[key] for key in ("memories", "ingest_s", "memories_per_s")}


def engram_env() -> dict[str, str]:
    """As peer_engram.py runs its children: offline, and no ENGRAM_* setting from outside."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ENGRAM_")}
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_DATASETS_OFFLINE")
    return env | dict.fromkeys(offline, "1") | {"TOKENIZERS_PARALLELISM": "false"}


@dataclass
class Peer:
    key: str
    label: str
    script: str
    needs: tuple[str, ...]  # paths under PEERS_DIR that an installed peer has
    options: Callable[[Path], list[str]]
    figures: Callable[[list[dict[str, Any]]], Figures]
    extra: Callable[[Path, Path, dict[str, Any]], Figures] | None = None


PEERS = (
    Peer(
        "engram",
        "engram-memory-system 0.8.1",
        "peer_engram.py",
        ("engram-venv/bin/engram", "engram-config.yaml"),
        lambda p: ["--config", str(p / "engram-config.yaml"), "--venv", str(p / "engram-venv")],
        engram_figures,
        engram_one_at_a_time,
    ),
    Peer(
        "mms",
        "mcp-memory-service 12.4.0",
        "peer_mms.py",
        ("mms-venv/bin/memory", "mms-home"),
        # hybrid is what memproc runs, so it is the main server's mode; semantic for reference
        lambda p: [
            *("--venv", str(p / "mms-venv"), "--home", str(p / "mms-home")),
            *("--modes", "hybrid,semantic"),
        ],
        mms_figures,
    ),
)


def missing(peer: Peer, peers_dir: Path) -> list[str]:
    return [need for need in peer.needs if not (peers_dir / need).exists()]


def installed(args: argparse.Namespace) -> tuple[list[Peer], dict[str, Any]]:
    """The peers to run, and a note for each one that is not installed. Called before
    memproc's part of the run: an installed peer whose script is missing ends it at once."""
    peers_dir = Path(args.peers_dir).resolve()
    ready, skipped = [], {}
    for peer in PEERS:
        absent = missing(peer, peers_dir)
        if absent:
            skipped[peer.key] = {
                "label": peer.label,
                "skipped": f"not installed in {peers_dir} (no {', '.join(absent)}; {SETUP_HINT})",
            }
            continue
        script = Path(args.peer_scripts) / peer.script
        if not script.is_file():
            raise SystemExit(
                f"peers.py: {peer.label} is installed in {peers_dir} but its measuring script "
                f"{script} is missing: pass --peer-scripts DIR (../shared/peers) or --skip-peers"
            )
        ready.append(peer)
    return ready, skipped


def run_peer(peer: Peer, args: argparse.Namespace, data: Path, tag: str) -> dict[str, Any]:
    """The peer's script on `data` (one conversation); its report, with the load around it."""
    peers_dir = Path(args.peers_dir).resolve()
    script = Path(args.peer_scripts) / peer.script
    out = peers_dir / f"peers-bench-{peer.key}-{tag}.json"
    argv = [sys.executable, str(script), *peer.options(peers_dir), "--data", str(data)]
    argv += ["--out", str(out), "--max-q", str(args.max_q)]
    print(f"== {peer.label}: {' '.join(argv)}", file=sys.stderr, flush=True)
    env = dict(os.environ, PEERS_DIR=str(peers_dir))
    load = os.getloadavg()[0]
    done = subprocess.run(argv, env=env, stdout=subprocess.PIPE, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"peers.py: {peer.script} exited {done.returncode}:\n{done.stdout}")
    report = json.loads(out.read_text(encoding="utf-8"))
    report |= {"bench_report": str(out), "bench_line": done.stdout.strip()}
    if peer.extra is not None:
        report["bench_one_at_a_time"] = peer.extra(script, peers_dir, report)
    report["bench_load"] = [load, os.getloadavg()[0]]
    return report


def summarise(peers: list[Peer], reports: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    return {
        peer.key: {
            "label": peer.label,
            "reports": [r["bench_report"] for r in reports[peer.key]],
            "lines": [r["bench_line"] for r in reports[peer.key]],
            "figures": peer.figures(reports[peer.key]),
        }
        for peer in peers
    }


# -- printing ----------------------------------------------------------------------------------

COLUMNS = (
    ("init (s)", "init_s", "{:.2f}"),
    ("first search (s)", "first_search_s", "{:.2f}"),
    ("ingest (/s)", "ingest_per_s", "{:.1f}"),
    ("search p50 (ms)", "search_ms_p50", "{:.1f}"),
    ("search p95 (ms)", "search_ms_p95", "{:.1f}"),
    ("peak RSS (MB)", "peak_rss_mb", "{:.0f}"),
    ("recall@10", "recall_at_10", "{:.3f}"),
    ("1-min load", "load_1min", "{:.1f}"),
)


def cell(value: Any, fmt: str) -> str:
    return "-" if value is None else fmt.format(value)


def markdown_row(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def measured(report: dict[str, Any]) -> list[tuple[str, Figures]]:
    rows = [("memproc", report["memproc"]["summary"])]
    for peer in report["peers"].values():
        if "figures" in peer:
            rows.append((peer["label"], peer["figures"]))
    return rows


def print_main_table(report: dict[str, Any]) -> None:
    print(markdown_row(["system", *(title for title, _, _ in COLUMNS)]))
    print(markdown_row(["---"] * (len(COLUMNS) + 1)))
    for label, figures in measured(report):
        print(markdown_row([label, *(cell(figures.get(key), fmt) for _, key, fmt in COLUMNS)]))
    print()


def print_per_conversation(report: dict[str, Any]) -> None:
    """Search p50 and ingest per conversation: the issue's target is set on a ~700-memory store."""
    systems = measured(report)
    titles = [f"{label.split()[0]} p50 / ingest" for label, _ in systems]
    print(markdown_row(["conversation", "turns", *titles]))
    print(markdown_row(["---"] * (len(systems) + 2)))
    mine = report["memproc"]["conversations"]
    for index, entry in enumerate(mine):
        cells = [entry["sample_id"], str(entry["turns"])]
        cells.append(f"{entry['search_ms_p50']:.1f} ms / {entry['ingest']['memories_per_s']:.1f}")
        for _, figures in systems[1:]:
            conv = figures["per_conversation"][index]
            cells.append(f"{conv['search_ms_p50']:.1f} ms / {conv['ingest_per_s']:.1f}")
        print(markdown_row(cells))
    print()


def target_lines(report: dict[str, Any]) -> list[str]:
    """The issue's done-when lines, each against this run's figures."""
    me = report["memproc"]["summary"]
    peers = [figures for _, figures in measured(report)[1:]]
    lines = [
        verdict("spawn to ping <= 100 ms", me["init_s"] <= 0.1, f"{me['init_s'] * 1000:.0f} ms"),
        verdict(
            "first hybrid search <= 0.5 s after spawn",
            me["first_search_s"] <= 0.5,
            f"{me['first_search_s']:.2f} s (dense used from {me['first_dense_search_s']:.2f} s)",
        ),
    ]
    if not peers:
        return [*lines, "peer targets: no peer measured in this run"]
    fast_p50 = min(p["search_ms_p50"] for p in peers)
    low_rss = min(p["peak_rss_mb"] for p in peers)
    # the like-for-like reading last, so it names the line when both readings agree
    scripted = max(p["ingest_per_s"] for p in peers)
    alike = max(p.get("ingest_one_at_a_time_per_s") or p["ingest_per_s"] for p in peers)
    fastest = {scripted: "as the peers' scripts ingest", alike: "one at a time"}
    for fast, how in fastest.items():
        ratio = me["ingest_per_s"] / fast
        target = f"ingest >= 2x the faster peer's ({how}: {fast:.1f}/s)"
        lines.append(verdict(target, ratio >= 2, f"{ratio:.2f}x"))
    ratio = me["search_ms_p50"] / fast_p50
    lines.append(verdict("search p50 <= 0.5x the faster peer's", ratio <= 0.5, f"{ratio:.2f}x"))
    lines.append(
        verdict(
            "peak RSS below both peers'",
            me["peak_rss_mb"] < low_rss,
            f"{me['peak_rss_mb']:.0f} MB vs {low_rss:.0f} MB",
        )
    )
    return lines


def verdict(target: str, met: bool, value: str) -> str:
    return f"{'met    ' if met else 'NOT met'}  {target}: {value}"


def print_tables(report: dict[str, Any]) -> None:
    print_main_table(report)
    print_per_conversation(report)
    me = report["memproc"]["summary"]
    print(
        f"memproc: first search on the empty store served as {first_search_note(report)}; "
        f"{me['served_not_hybrid']} of {me['questions']} question searches not served as "
        "hybrid with the dense channel"
    )
    for peer in report["peers"].values():
        if "skipped" in peer:
            print(f"{peer['label']}: {peer['skipped']}")
    mms = report["peers"].get("mms", {}).get("figures")
    if mms and mms.get("semantic_recall_at_10") is not None:
        print(
            f"mcp-memory-service semantic mode (fresh server, same store): recall@10 "
            f"{mms['semantic_recall_at_10']:.3f}, search p50 {mms['semantic_search_ms_p50']} ms"
        )
    engram = report["peers"].get("engram", {}).get("figures")
    if engram and engram.get("ingest_one_at_a_time_per_s") is not None:
        print(
            f"engram ingest in the table: its store API, embedding in batches of 128; one "
            f"memory at a time (batches of 1) it stores {engram['ingest_one_at_a_time_per_s']}/s"
        )
    print()
    print("\n".join(target_lines(report)))


def first_search_note(report: dict[str, Any]) -> str:
    notes = sorted(
        {
            f"{e['first_search_mode']}"
            + (f" (degraded: {e['first_search_degraded']})" if e["first_search_degraded"] else "")
            + (", dense channel used" if e["first_search_used_dense"] else ", no dense channel")
            for e in report["memproc"]["conversations"]
        }
    )
    return "; ".join(notes)
