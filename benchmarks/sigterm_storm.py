"""Shutdown under fire: SIGTERM at random moments of a real `memproc serve`, under CPU load.

Each trial spawns a server on its own database and sends one SIGTERM at a random delay in one
of five phases; it then waits for the exit. A process still running `--hang-after` seconds after
its SIGTERM is a hang (it is killed, and counted): a deadlocked signal path never ends, while a
sound one exits within `shutdown_deadline_s` plus the cancel grace. Two busy processes keep both
cores loaded throughout, as a shared CI machine would.

Phases:
- start: 0-60 ms after spawn, before or while the service installs its handlers;
- ping: 0-20 ms after the first `ping` answer (the service idle in its wait);
- write: 0-20 ms after pipelining remembers (workers inside SQLite transactions);
- model_load: 0-400 ms after the first `ping` with MiniLM loading in the background;
- eof: 0-20 ms after closing stdin (the drain already running).

A signal that lands before the handlers exist ends the process by the default action
(exit status -15); that is a clean end, reported apart, not a hang.

    .venv/bin/python benchmarks/sigterm_storm.py [--trials 1000] [--load 2]
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODELS_DIR = REPO / ".cache" / "models"
PHASES = ("start", "ping", "write", "model_load", "eof")
PING = b'{"jsonrpc":"2.0","id":0,"method":"ping"}\n'
BUSY_LOOP = "while True: pass"


@dataclass
class Trial:
    phase: str
    delay_ms: float
    exit_s: float | None  # SIGTERM to exit; None for a hang
    status: int | None


def remember_lines(count: int) -> bytes:
    lines = []
    for n in range(count):
        params = {"scope": "storm", "kind": "fact", "content": f"write {n} before the signal"}
        lines.append({"jsonrpc": "2.0", "id": n + 1, "method": "memory.remember", "params": params})
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def spawn(db: Path, models_dir: Path) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "memproc", "serve", "--db", str(db)]
    argv += ["--models-dir", str(models_dir), "--log-level", "warning"]
    return subprocess.Popen(
        argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )


def await_ping(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(PING)
    child.stdin.flush()
    if b'"result"' not in child.stdout.readline():
        raise SystemExit("the server did not answer ping")


def run_trial(phase: str, workdir: Path, empty_models: Path, rng: random.Random) -> Trial:
    db = workdir / "memory.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    child = spawn(db, MODELS_DIR if phase == "model_load" else empty_models)
    assert child.stdin is not None
    delay_ms = rng.uniform(0, {"start": 60, "model_load": 400}.get(phase, 20))
    if phase != "start":
        await_ping(child)
    if phase == "write":
        child.stdin.write(remember_lines(20))
        child.stdin.flush()
    elif phase == "eof":
        child.stdin.close()
    time.sleep(delay_ms / 1000)
    child.send_signal(signal.SIGTERM)
    signalled = time.monotonic()
    try:
        status: int | None = child.wait(timeout=ARGS.hang_after)
        exit_s: float | None = time.monotonic() - signalled
    except subprocess.TimeoutExpired:
        child.kill()
        child.wait()
        status, exit_s = None, None
    for stream in (child.stdin, child.stdout):
        if stream is not None and not stream.closed:
            stream.close()
    return Trial(phase, delay_ms, exit_s, status)


def start_load(count: int) -> list[subprocess.Popen[bytes]]:
    return [subprocess.Popen([sys.executable, "-c", BUSY_LOOP]) for _ in range(count)]


def report(trials: list[Trial]) -> None:
    print(
        f"{'phase':<11} {'trials':>6} {'hangs':>5} {'p50 ms':>7} {'p99 ms':>7} {'max ms':>7}  exits"
    )
    for phase in (*PHASES, "all"):
        rows = [t for t in trials if phase in ("all", t.phase)]
        times = sorted(t.exit_s * 1000 for t in rows if t.exit_s is not None)
        hangs = sum(t.exit_s is None for t in rows)
        exits = collections.Counter("hang" if t.status is None else t.status for t in rows)
        p50 = statistics.median(times) if times else float("nan")
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))] if times else float("nan")
        top = max(times) if times else float("nan")
        codes = ", ".join(f"{code}: {n}" for code, n in sorted(exits.items(), key=str))
        print(f"{phase:<11} {len(rows):>6} {hangs:>5} {p50:>7.1f} {p99:>7.1f} {top:>7.1f}  {codes}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000)
    parser.add_argument("--load", type=int, default=2, help="busy processes beside the trials")
    parser.add_argument("--hang-after", type=float, default=15.0, help="seconds: then a hang")
    parser.add_argument("--seed", type=int, default=11)
    return parser.parse_args()


def main() -> None:
    if not (MODELS_DIR / "minilm-l6-int8").is_dir():
        raise SystemExit(
            f"pull the model first: memproc models pull minilm-l6-int8 --models-dir {MODELS_DIR}"
        )
    rng = random.Random(ARGS.seed)
    load = start_load(ARGS.load)
    trials: list[Trial] = []
    started = time.monotonic()
    try:
        with tempfile.TemporaryDirectory(prefix="memproc-storm-") as tmp:
            workdir, empty_models = Path(tmp), Path(tmp) / "no-models"
            empty_models.mkdir()
            for n in range(ARGS.trials):
                trials.append(run_trial(PHASES[n % len(PHASES)], workdir, empty_models, rng))
                if (n + 1) % 100 == 0:
                    hangs = sum(t.exit_s is None for t in trials)
                    print(f"{n + 1} trials, {hangs} hangs", file=sys.stderr, flush=True)
    finally:
        for busy in load:
            busy.kill()
            busy.wait()
    print(
        f"{len(trials)} SIGTERMs, {ARGS.load} busy processes, {time.monotonic() - started:.0f} s, "
        f"seed {ARGS.seed}, python {sys.version.split()[0]}, {os.cpu_count()} cpus"
    )
    report(trials)


if __name__ == "__main__":
    ARGS = parse_args()
    main()
