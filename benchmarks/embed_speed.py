"""Per-call embedding time and memory: memproc's embedder beside the best onnxruntime can do.

    python benchmarks/embed_speed.py [--models-dir .cache/models] [--model minilm-l6-int8]
                                     [--rounds 20] [--no-memory]

- Latency, for 1, 8 and 64 texts of realistic lengths (notes of 8 to 60 tokens): memproc's
  `Embedder.embed` (tokenize, length-sorted batches, run, pool, normalize), exactly as the
  service calls it, beside every onnxruntime configuration in `ortfloor.py` doing the same
  call, all in one process and interleaved call by call. The floor is the fastest
  configuration at each size; its name is printed.
- Memory, each in a fresh process: load time, resident memory (VmRSS) with the model loaded,
  and the peak (VmHWM) through load and then through one pass of the workload.
- Equivalence: the cosine of memproc's vectors to the published graph run with no
  optimization at all, on the 64 texts.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

import ortfloor

REPO = Path(__file__).resolve().parent.parent
SIZES = (1, 8, 64)
MEMPROC = "memproc"
# The example: one short note, 18 tokens with [CLS] and [SEP].
ONE = "remember that the staging database listens on port 5433, not the default 5432"
NOTES = (
    "The build fails on CI because the cache key omits the lockfile hash.",
    "Run the migrations before starting the API server, or the health check times out.",
    "Alice prefers squash merges and wants the changelog updated in the same pull request.",
    "The flaky test in test_scheduler.py depends on wall-clock time; freeze the clock.",
    "Production logs are shipped to the EU bucket; never copy them to a laptop.",
    "Use ruff format, not black: the two disagree on trailing commas in call arguments.",
    "The ONNX model is pulled from the package index, so the build works offline.",
    "Deploys happen on Tuesdays and Thursdays after the 10:00 stand-up, never on Fridays.",
    "When the queue backs up, scale the workers first; the database is rarely the bottleneck.",
    "The parser rejects tabs in YAML front matter, which breaks the docs build on Windows.",
    "Rotate the staging API token every 90 days; the reminder lives in the team calendar.",
    "Bob said the retry budget for the payment client is three attempts with jitter.",
    "Search latency regressed after the FTS5 tokenizer changed; the fix was porter stemming.",
    "Keep the SQLite database in WAL mode; readers must never block the single writer.",
    "The frontend uses pnpm, and the lockfile must be committed with every dependency bump.",
    "Benchmarks run on a two-core machine shared with other developers: interleave runs.",
)


def texts(count: int) -> list[str]:
    """`count` notes of 8 to 60 tokens: single notes, and pairs or triples of them joined."""
    if count == 1:
        return [ONE]
    made = []
    for index in range(count):
        width = 1 + index % 3
        made.append(" ".join(NOTES[(index + k * 5) % len(NOTES)] for k in range(width)))
    return made


def load_memproc(model_dir: str, threads: int) -> Any:
    from memproc.models.embedder import Embedder

    return Embedder(model_dir, threads=threads)


def service_threads() -> int:
    """What memproc's model manager uses when model_threads is 0."""
    return min(4, os.cpu_count() or 1)


# -- latency -----------------------------------------------------------------------------------


def rounds_for(size: int, rounds: int) -> int:
    return {1: 3 * rounds, 8: rounds}.get(size, max(3, rounds // 4))


def measure_latency(model_dir: str, offline_dir: str, rounds: int) -> dict[int, dict[str, float]]:
    memproc = load_memproc(model_dir, service_threads())
    floors = {c.name: ortfloor.load(model_dir, c, offline_dir) for c in ortfloor.candidates()}
    figures = {}
    for size in SIZES:
        batch = texts(size)
        calls = {MEMPROC: lambda b=batch: memproc.embed(b)}
        calls.update({name: (lambda e=e, b=batch: e.embed(b)) for name, e in floors.items()})
        figures[size] = ortfloor.interleaved(calls, rounds_for(size, rounds))
        print(f"timed {size} texts", file=sys.stderr, flush=True)
    return figures


def print_latency(figures: dict[int, dict[str, float]], tokens: dict[int, int]) -> None:
    names = list(figures[SIZES[0]])
    header = "".join(f"{f'{n} text' + ('s' if n > 1 else ''):>14}" for n in SIZES)
    print(f"{'per-call ms (median)':<40}{header}")
    for name in names:
        label = f"{name} (memproc)" if name == MEMPROC else f"floor candidate: {name}"
        row = "".join(f"{figures[n][name] * 1000:14.2f}" for n in SIZES)
        print(f"{label:<40}{row}")
    best = {n: min((v, k) for k, v in figures[n].items() if k != MEMPROC) for n in SIZES}
    print(f"{'floor (best candidate)':<40}" + "".join(f"{best[n][0] * 1000:14.2f}" for n in SIZES))
    ratio = "".join(f"{figures[n][MEMPROC] / best[n][0]:13.2f}x" for n in SIZES)
    print(f"{'memproc / floor':<40}{ratio}")
    for n in SIZES:
        print(f"  floor at {n} texts ({tokens[n]} tokens): {best[n][1]}")
    print()


# -- memory, one process per configuration -----------------------------------------------------


def status() -> dict[str, float]:
    with open("/proc/self/status") as handle:
        fields = dict(line.split(":", 1) for line in handle)
    return {key: int(fields[key].split()[0]) / 1024 for key in ("VmRSS", "VmHWM")}


def child(name: str, model_dir: str, offline_dir: str) -> None:
    """Runs in its own process: load one configuration, then the workload; print JSON."""
    import memproc.models.embedder  # noqa: F401  (imports count for every row alike)

    before = status()
    started = time.perf_counter()
    if name == MEMPROC:
        embed = load_memproc(model_dir, service_threads()).embed
    else:
        (candidate,) = [c for c in ortfloor.candidates() if c.name == name]
        embed = ortfloor.load(model_dir, candidate, offline_dir).embed
    load_s = time.perf_counter() - started
    loaded = status()
    for size in SIZES:
        embed(texts(size))
    after = status()
    report = {"load_s": load_s, "imports_mb": before["VmRSS"], "rss_loaded_mb": loaded["VmRSS"]}
    report |= {"hwm_loaded_mb": loaded["VmHWM"], "rss_after_mb": after["VmRSS"]}
    report |= {"hwm_after_mb": after["VmHWM"]}
    print(json.dumps(report))


def measure_memory(model_dir: str, offline_dir: str) -> dict[str, dict[str, float]]:
    names = [MEMPROC, *(c.name for c in ortfloor.candidates())]
    figures = {}
    for name in names:
        command = [sys.executable, __file__, "--child", name, "--models-dir"]
        command += [os.path.dirname(model_dir), "--model", os.path.basename(model_dir)]
        command += ["--offline-dir", offline_dir]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        figures[name] = json.loads(done.stdout.splitlines()[-1])
    return figures


def print_memory(figures: dict[str, dict[str, float]]) -> None:
    print(
        f"{'memory, fresh process each':<40}{'load s':>8}{'RSS MB':>9}{'peak MB':>9}"
        f"{'RSS after':>11}{'peak after':>12}"
    )
    for name, row in figures.items():
        label = f"{name} (memproc)" if name == MEMPROC else name
        print(
            f"{label:<40}{row['load_s']:8.3f}{row['rss_loaded_mb']:9.0f}{row['hwm_loaded_mb']:9.0f}"
            f"{row['rss_after_mb']:11.0f}{row['hwm_after_mb']:12.0f}"
        )
    imports = figures[MEMPROC]["imports_mb"]
    print(
        f"  (RSS/peak: with the model loaded; after: one pass of 1, 8 and 64 texts; the "
        f"interpreter with numpy, onnxruntime and tokenizers imported holds {imports:.0f} MB)"
    )
    print()


# -- equivalence -------------------------------------------------------------------------------


def print_equivalence(model_dir: str) -> None:
    memproc = load_memproc(model_dir, service_threads())
    batch = texts(64)
    ours = memproc.embed(batch)
    plain = ortfloor.reference(model_dir).embed(batch)
    cosine = (ours * plain).sum(axis=1) / (
        np.linalg.norm(ours, axis=1) * np.linalg.norm(plain, axis=1)
    )
    print(
        f"memproc vectors vs the published graph with no optimization (64 texts): "
        f"min cosine {cosine.min():.7f}, max |difference| {np.abs(ours - plain).max():.2e}"
    )
    # An older memproc (measured for a before/after) has no graph_path: it ran model.onnx.
    print(f"memproc runs {getattr(memproc, 'graph_path', 'model.onnx')}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models-dir", default=str(REPO / ".cache" / "models"))
    parser.add_argument("--model", default="minilm-l6-int8")
    parser.add_argument("--rounds", type=int, default=20, help="calls per row at 8 texts")
    parser.add_argument("--no-memory", action="store_true", help="skip the memory processes")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--offline-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    model_dir = os.path.join(args.models_dir, args.model)
    if args.child:
        child(args.child, model_dir, args.offline_dir)
        return
    with tempfile.TemporaryDirectory(prefix="embed-speed-") as offline_dir:
        ortfloor.offline_copy(model_dir, offline_dir)
        tokens = {n: sum(load_memproc(model_dir, 1).token_counts(texts(n))) for n in SIZES}
        print(f"{args.model}, {service_threads()} threads for memproc, {os.cpu_count()} cores\n")
        print_latency(measure_latency(model_dir, offline_dir, args.rounds), tokens)
        if not args.no_memory:
            print_memory(measure_memory(model_dir, offline_dir))
        print_equivalence(model_dir)


if __name__ == "__main__":
    main()
