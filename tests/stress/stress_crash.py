"""Crash safety: kill -9 a real `memproc serve` in the middle of its writes, again and again, and
show that every acknowledged write survives whole and that nothing half-applied is ever visible.

A trial: start `memproc serve` on the database file the previous trial's server died on; check
everything (crash_checks.py); then pipeline bursts of writes at it (memories, evidence,
checkpoints, edits and supersedes; crash_workload.py), recording each acknowledged result,
until it is killed with SIGKILL. Half of the kills come from a timer at a random delay, landing
wherever the server happens to be; the other half come a few milliseconds after a burst of a
hundred or more writes, so that many writes are queued, running or committing at that moment.
After the kill, with no server running, a copy of the file and its WAL as the kill left them is
checked (integrity_check, foreign keys, what `memproc index verify` checks); the next server
recovers the original. On PostgreSQL (`database` a `postgresql://` URL, `--postgres URL` in the
long mode) it is the database itself that is checked before the next server starts: the write
lock is free again, `PgStore.integrity_check` and the same index check (crash_checks.py). A
last server checks the last trial (with an embedder, it also waits for the backfill to bring
every vector up to date) and must then exit 0 on EOF.

An acknowledgement is a success response received by the driver. A write whose response never
arrived may or may not have been applied; it must be absent or whole, never partial.

## Durability: `synchronous = "full"` (the default, kept)

What kill -9 tests is atomicity and ordering: that a response leaves only after its COMMIT,
and that SQLite's WAL recovery yields exactly the committed transactions. It does not test
fsync. A committed WAL frame is in the operating system's page cache when COMMIT returns
whatever `synchronous` says, and the kernel still writes it out after the process dies; SQLite
documents that WAL transactions survive an application crash with any setting. So these trials
pass with `synchronous = "normal"` too (`--synchronous normal` runs them), and they could not
tell NORMAL from FULL.

The difference is power loss and OS crashes: in WAL mode NORMAL syncs only at checkpoints, so
the last commits before a power cut can roll back; FULL syncs the WAL on every commit, so a
write is on stable storage before its response is sent. memproc's promise is that an
acknowledged write is never lost, and an agent's harness treats an acknowledgement as final (it
will not send that memory again), so the default stays FULL. The price is one fsync per write
transaction, which the driver's `acknowledged_per_s` figure under each setting shows. `normal`
remains available for throughput where losing the last commits to a power cut is acceptable;
`extra` differs from FULL only in rollback-journal (DELETE) mode, so in WAL mode it adds nothing.

Long mode (the figures for benchmarks/RELIABILITY.md):
    .venv/bin/python tests/stress/stress_crash.py --trials 24
(24 trials without an embedder, then 24 with MiniLM, under `synchronous = full`; add
`--synchronous normal --embedder none` for the comparison above.)
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import _paths  # noqa: F401  (puts tests/contract on sys.path when run as a script)
import pg_target
from client import Client, ServerError, check_stream, clean_env, empty_models_dir, memproc_argv
from crash_checks import (
    Tally,
    check_after_kill,
    check_store,
    store_vectors_pending,
    verify_after_restart,
)
from crash_workload import Ledger, Workload, Write

REPO_MODELS = Path(__file__).resolve().parents[2] / ".cache" / "models"
RESPONSE_TIMEOUT = 120.0
BACKFILL_POLL_S = 0.05
# The figures that must be 0 for the run to pass.
MUST_BE_ZERO = (
    "writes_lost",
    "half_applied",
    "integrity_failures",
    "index_drift",
    "replay_mismatches",
    "errors",
)


@dataclass(frozen=True)
class Sizes:
    """How hard each trial writes. The timer kill lands within `max_delay_s` of the first
    write; a burst kill lands within `burst_kill_delay_s` of a burst of `big_burst` writes."""

    max_delay_s: float = 1.5
    max_burst: int = 32
    big_burst: int = 160
    burst_kill_delay_s: float = 0.05


@dataclass
class Trial:
    """One server's life between two kills: what it acknowledged, what was left in flight."""

    acknowledged: list[tuple[Write, dict[str, Any]]] = field(default_factory=list)
    pending: list[Write] = field(default_factory=list)
    write_seconds: float = 0.0


@dataclass
class Run:
    """One run: its file and settings, the ledger and tally every trial adds to, and counts."""

    directory: Path
    db: Path | str  # an SQLite file or a PostgreSQL URL
    models_dir: Path
    synchronous: str
    rng: random.Random
    sizes: Sizes
    with_embedder: bool
    ledger: Ledger = field(default_factory=Ledger)
    tally: Tally = field(default_factory=Tally)
    servers: int = 0
    acknowledged: dict[str, int] = field(default_factory=dict)
    in_flight_at_kill: int = 0
    kills_with_writes_in_flight: int = 0
    truncated_lines: int = 0
    write_seconds: float = 0.0
    memories_with_vectors: int = 0
    vectors_pending_at_end: int = 0

    def start_server(self) -> Client:
        self.servers += 1
        argv = memproc_argv(self.db, "--models-dir", str(self.models_dir), "--max-pending", "1000")
        return Client(
            argv,
            stderr_path=self.directory / f"stderr-{self.servers}.log",
            env=clean_env(MEMPROC_SYNCHRONOUS=self.synchronous),
            name=f"memproc#{self.servers}",
        )


def run(
    *,
    trials: int = 24,
    seed: int = 1,
    synchronous: str = "full",
    models_dir: Path | None = None,
    sizes: Sizes | None = None,
    directory: Path | None = None,
    database: Path | str | None = None,
) -> dict[str, Any]:
    """Run `trials` kill -9 trials on one database; the figures (see MUST_BE_ZERO).

    `models_dir` None runs without an embedder (no vectors); with MiniLM the writes carry
    vectors and each restart runs a backfill, which the next kill may interrupt too.
    `database`: an SQLite path or an empty PostgreSQL database's URL (default: a file in
    `directory`)."""
    with tempfile.TemporaryDirectory(prefix="memproc-crash-") as scratch:
        where = directory or Path(scratch)
        db = database or where / "crash.db"
        state = Run(
            directory=where,
            db=db,
            models_dir=models_dir or empty_models_dir(where),
            synchronous=synchronous,
            rng=random.Random(seed),
            sizes=sizes or Sizes(),
            with_embedder=models_dir is not None,
        )
        started = time.monotonic()
        _run_trials(state, trials)
        return _figures(state, trials, models_dir, time.monotonic() - started)


def _run_trials(state: Run, trials: int) -> None:
    workload = Workload(state.rng, state.ledger)
    last = Trial()
    for _ in range(trials):
        server = state.start_server()
        try:
            verify_after_restart(server, state.ledger, last.pending, last.acknowledged, state.tally)
            if state.with_embedder and state.rng.random() < 0.5:
                _wait_for_embedder(state, server)
            last = _drive_until_killed(state, server, workload)
        finally:
            server.close()
        _check_responses(state, server)
        check_after_kill(state.db, state.directory / "copy", state.tally)
    _final_check(state, last)


def _wait_for_embedder(state: Run, server: Client) -> None:
    """Writes made before the model is ready carry no vectors, and the backfill adds them
    once it is. Half of the trials wait, so that their writes store vectors in their own
    transactions; the other half write at once, leaving work for the next server's backfill,
    which then runs beside that trial's writes and may be killed too."""
    component = server.wait_component("embedder", timeout=RESPONSE_TIMEOUT)
    if component["state"] != "ready":
        state.tally.note("errors", f"the embedder did not load: {component}")


def _final_check(state: Run, last: Trial) -> None:
    """A last restart checks the last trial's writes; this server must then exit cleanly."""
    server = state.start_server()
    try:
        verify_after_restart(server, state.ledger, last.pending, last.acknowledged, state.tally)
        if state.with_embedder:
            _wait_for_embedder(state, server)
            _wait_for_backfill(state, server)
        status = server.finish(timeout=RESPONSE_TIMEOUT)
        if status != 0:
            state.tally.note("errors", f"the last server exited with status {status}")
    finally:
        server.close()
    _check_responses(state, server)
    report = check_store(state.db, state.tally)
    state.memories_with_vectors = sum(
        report.memories_searchable - embedder.missing_or_stale for embedder in report.embedders
    )
    state.vectors_pending_at_end = sum(embedder.missing_or_stale for embedder in report.embedders)


def _wait_for_backfill(state: Run, server: Client) -> None:
    """After all the kills, a server left alone must bring every vector up to date: poll the
    file (beside the running server) until nothing is pending, pacing with a round trip."""
    deadline = time.monotonic() + RESPONSE_TIMEOUT
    while store_vectors_pending(state.db):
        if time.monotonic() > deadline:
            state.tally.note("errors", "the backfill did not catch up")
            return
        server.ping()
        time.sleep(BACKFILL_POLL_S)


# -- one trial: write until killed -------------------------------------------------------------


def _drive_until_killed(state: Run, server: Client, workload: Workload) -> Trial:
    """Pipeline bursts of writes until the kill; then sort out every write sent."""
    rng, sizes = state.rng, state.sizes
    killed = threading.Event()

    def kill() -> None:
        killed.set()
        server.kill()

    big_burst_at = rng.randrange(4) if rng.random() < 0.5 else None
    timer = None
    if big_burst_at is None:
        timer = threading.Timer(rng.uniform(0, sizes.max_delay_s), kill)
        timer.start()
    trial = Trial()
    sent: list[tuple[int, Write]] = []
    started = time.monotonic()
    try:
        for number in itertools.count():
            big = number == big_burst_at
            size = sizes.big_burst if big else rng.randint(1, sizes.max_burst)
            burst = [_send(server, write, sent) for write in workload.burst(size)]
            if big:
                time.sleep(rng.uniform(0, sizes.burst_kill_delay_s))
                kill()
            for request_id, write in burst:
                _settle(state, trial, write, server.wait_for(request_id, RESPONSE_TIMEOUT))
    except ServerError:
        if not killed.is_set():
            raise  # not our kill: a timeout, or the stream broke
    finally:
        if timer is not None:
            timer.cancel()
    trial.write_seconds = time.monotonic() - started
    server.wait_exit(RESPONSE_TIMEOUT)
    _sort_out(state, trial, server, sent)
    return trial


def _send(server: Client, write: Write, sent: list[tuple[int, Write]]) -> tuple[int, Write]:
    """Record the write as sent before sending it: a kill may cut it off half-written."""
    request_id = server.new_id()
    sent.append((request_id, write))
    server.request(write.method, write.params, id=request_id)
    return request_id, write


def _settle(state: Run, trial: Trial, write: Write, response: dict[str, Any]) -> None:
    """Take an answered write into the ledger (an error is never expected here)."""
    if "result" not in response:
        state.tally.note("errors", f"{write.method} {write.target}: {response}")
        return
    trial.acknowledged.append((write, response["result"]))
    state.acknowledged[write.method] = state.acknowledged.get(write.method, 0) + 1
    problem = state.ledger.acknowledge(write, response["result"])
    if problem:
        state.tally.note("errors", problem)


def _sort_out(state: Run, trial: Trial, server: Client, sent: list[tuple[int, Write]]) -> None:
    """Every write sent to the now dead server: acknowledged (some responses arrived before
    the driver waited for them) or pending (no response: it may or may not be in)."""
    settled = {id(write) for write, _ in trial.acknowledged}
    for request_id, write in sent:
        responses = server.responses(request_id)
        if not responses:
            trial.pending.append(write)
        elif id(write) not in settled:
            _settle(state, trial, write, responses[0])
    state.in_flight_at_kill += len(trial.pending)
    state.kills_with_writes_in_flight += bool(trial.pending)
    state.write_seconds += trial.write_seconds


def _check_responses(state: Run, server: Client) -> None:
    """Every complete stdout line was a well-formed response. A kill can cut the last line
    short; such a line is no response (its write counts as pending) and is only counted."""
    lines = list(server.lines)
    if lines and not lines[-1].endswith(b"\n"):
        state.truncated_lines += 1
        lines.pop()
    try:
        check_stream(SimpleNamespace(lines=lines))  # type: ignore[arg-type]
    except AssertionError as exc:
        state.tally.note("errors", f"{server.name} stdout: {exc}")


# -- figures and the long mode -------------------------------------------------------------------


def _figures(state: Run, trials: int, models_dir: Path | None, seconds: float) -> dict[str, Any]:
    tally = state.tally
    acknowledged = sum(state.acknowledged.values())
    return {
        "suite": "crash",
        "store": "postgres" if pg_target.is_postgres(state.db) else "sqlite",
        "synchronous": state.synchronous,
        "embedder": _embedder_name(models_dir),
        "trials": trials,
        "kills": trials,
        "kills_with_writes_in_flight": state.kills_with_writes_in_flight,
        "acknowledged_writes": acknowledged,
        "acknowledged_by_method": dict(sorted(state.acknowledged.items())),
        "acknowledged_per_s": round(acknowledged / max(state.write_seconds, 1e-9), 1),
        "records_checked": tally.checked,
        "writes_lost": tally.lost,
        "half_applied": tally.half_applied,
        "integrity_failures": tally.integrity_failures,
        "index_drift": tally.index_drift,
        "replays": tally.replays,
        "replay_mismatches": tally.replay_mismatches,
        "errors": tally.errors,
        "unacknowledged_in_flight": state.in_flight_at_kill,
        "unacknowledged_present": tally.unacknowledged_present,
        "unacknowledged_absent": tally.unacknowledged_absent,
        "truncated_response_lines": state.truncated_lines,
        "records_at_end": state.ledger.size(),
        "memories_with_vectors": state.memories_with_vectors,
        "vectors_pending_at_end": state.vectors_pending_at_end,
        "wall_s": round(seconds, 1),
        **_lock_figures(tally),
        "problems": tally.problems[:50],
    }


def _lock_figures(tally: Tally) -> dict[str, Any]:
    """On PostgreSQL: how long a new writer waited for the write lock after each kill."""
    waits = tally.write_lock_waits_s
    if not waits:
        return {}
    return {"write_lock_checks": len(waits), "write_lock_max_wait_ms": round(max(waits) * 1000, 1)}


def _embedder_name(models_dir: Path | None) -> str | None:
    if models_dir is None:
        return None
    names = sorted(path.name for path in models_dir.iterdir() if path.is_dir())
    return ",".join(names) or None


# With MiniLM a write takes tens of milliseconds (embedding), so bursts are smaller.
SIZES_WITH_MODEL = Sizes(max_burst=8, big_burst=64)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=24, help="kill -9 trials per run")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--synchronous",
        action="append",
        choices=("normal", "full", "extra"),
        help="run the trials under this setting (repeatable; default: full)",
    )
    parser.add_argument(
        "--embedder",
        action="append",
        choices=("none", "minilm"),
        help="run without an embedder, or with MiniLM from --models-dir (repeatable; "
        "default: both)",
    )
    parser.add_argument("--models-dir", type=Path, default=REPO_MODELS)
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="run on fresh databases created on this PostgreSQL server (default: SQLite; "
        "`--synchronous` then has no effect)",
    )
    args = parser.parse_args(argv)
    failed = False
    for synchronous in args.synchronous or ["full"]:
        for embedder in args.embedder or ["none", "minilm"]:
            with_model = embedder == "minilm"
            with ExitStack() as stack:
                database = None
                if args.postgres:
                    database = stack.enter_context(pg_target.fresh_database(args.postgres))
                figures = run(
                    trials=args.trials,
                    seed=args.seed,
                    synchronous=synchronous,
                    models_dir=args.models_dir if with_model else None,
                    sizes=SIZES_WITH_MODEL if with_model else Sizes(),
                    database=database,
                )
            print(json.dumps(figures, indent=2), flush=True)
            failed = failed or any(figures[name] for name in MUST_BE_ZERO)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
