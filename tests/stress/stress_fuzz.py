"""Protocol fuzzing: hostile lines against one long-lived `memproc serve`, invariants after each.

Why one line at a time, each followed by a barrier: with `--workers 1`, a `memory.list` sent
right after a fuzz line is answered only after everything that line caused (the reader answers
envelope errors and inline methods before it reads the barrier; the single worker takes queued
requests in order). So every response is attributed to the line that caused it, exactly, whatever
ids the line held or failed to hold, and "exactly one response, or none for a notification or a
blank line" is checked line by line against `fuzz_oracle.expect`. Also checked after each line:
every stdout line is a well-formed JSON-RPC message (`check_line`), no answer is -32603 (an
internal error is a bug by the README's table), and the process is alive (a wait fails at once
if it dies). At the end: stdin is closed, the process must exit 0, and the database must pass
`PRAGMA integrity_check` and `memproc index verify`.

The lines are drawn from a seeded `random.Random` (or, in the contract test, from hypothesis):
the same seed sends the same kinds of lines in the same order; the ids inside them are the ones
the server handed out, so a failure prints the offending line itself.

    .venv/bin/python tests/stress/stress_fuzz.py --lines 100000 --seed 1
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (tests/contract on sys.path, for `client`)
import apsw
from client import Client, check_line, clean_env, memproc_argv
from fuzz_lines import Line, LineMaker
from fuzz_oracle import Expected, expect
from fuzz_params import Draw, Known, make_project
from fuzz_values import Rng

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODELS = REPO / ".cache" / "models"
# Small limits, so that lines and values cross them without costing megabytes per line.
LIMITS = {
    "max_line_bytes": 65_536,
    "max_content_chars": 8_192,
    "max_metadata_bytes": 4_096,
    "max_observation_bytes": 4_096,
}
INTERNAL_ERROR = -32603
# The barrier's id and scope; no id the line generator makes starts with it.
BARRIER_PREFIX = "~barrier"
LINE_TIMEOUT_S = 120.0


class FuzzFailure(AssertionError):
    """An invariant broke; the message holds the line that broke it and what came back."""

    def __init__(self, message: str, line: bytes = b"") -> None:
        super().__init__(message)
        self.line = line


class FuzzSession:
    """One `memproc serve` (one worker, small limits, a project directory) and the figures of
    everything sent to it so far."""

    def __init__(
        self,
        workdir: Path,
        *,
        models_dir: Path | None = None,
        flags: tuple[str, ...] = (),
        wrapper: tuple[str, ...] = (),
    ) -> None:
        """`flags` are added to the command line; `wrapper` runs before it (the path check
        runs the server under strace)."""
        workdir.mkdir(parents=True, exist_ok=True)
        self.db = workdir / "db" / "fuzz.db"
        self.db.parent.mkdir(exist_ok=True)
        self.project = make_project(workdir / "project")
        self.models_dir = models_dir
        argv = ["--workers", "1", "--max-line-bytes", str(LIMITS["max_line_bytes"])]
        argv += ["--project", str(self.project), *flags]
        if models_dir is not None:
            argv += ["--models-dir", str(models_dir), "--reranker", "none"]
        limits = {f"MEMPROC_{key.upper()}": str(value) for key, value in LIMITS.items()}
        limits["MEMPROC_MODEL_THREADS"] = "1"
        self.client = Client(
            [*wrapper, *memproc_argv(self.db, *argv)],
            stderr_path=workdir / "stderr.log",
            env=clean_env(**limits),
            name="memproc (fuzz)",
        )
        self.known = Known()
        self.codes: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.successes: Counter[str] = Counter()
        self.server_notifications = 0
        self.lines_sent = 0
        self.embedder = "none"
        if models_dir is not None:
            self.embedder = self._wait_for_embedder()
        for raw in self.client.drain():  # the start-up polls are not fuzz answers
            check_line(raw)

    def _wait_for_embedder(self) -> str:
        component = self.client.wait_component("embedder", timeout=LINE_TIMEOUT_S)
        if component["state"] != "ready":
            raise FuzzFailure(f"the embedder did not load: {component}")
        return str(component.get("detail", {}).get("name", "ready"))

    def line_maker(self, rng: Rng) -> LineMaker:
        draw = Draw(rng=rng, known=self.known, project=self.project, limits=LIMITS)
        return LineMaker(draw, LIMITS["max_line_bytes"])

    # -- one line ----------------------------------------------------------------------------

    def send(self, line: Line) -> None:
        """Send `line` and its barrier; check everything that came back for it."""
        expected = expect(line.data, LIMITS["max_line_bytes"])
        self.lines_sent += 1
        barrier_id = f"{BARRIER_PREFIX}-{self.lines_sent}"
        barrier = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": barrier_id,
                "method": "memory.list",
                "params": {"scope": BARRIER_PREFIX, "limit": 1},
            }
        ).encode()
        self.client.send_raw(line.data + b"\n" + barrier + b"\n", timeout=LINE_TIMEOUT_S)
        try:
            self.client.wait_for(barrier_id, timeout=LINE_TIMEOUT_S)
            answers = self._answers(barrier_id)
            self._check(expected, answers)
        except AssertionError as exc:
            raise FuzzFailure(self._describe(line, expected, exc), line.data) from None
        self._record(line, answers)

    def _answers(self, barrier_id: str) -> list[dict[str, Any]]:
        """The responses to the fuzz line: everything drained except the barrier's answer and
        the server's own notifications (backfill progress)."""
        answers, barriers = [], []
        for raw in self.client.drain():
            message = check_line(raw)
            if "id" not in message:
                self.server_notifications += 1
            elif message["id"] == barrier_id:
                barriers.append(message)
            else:
                answers.append(message)
        assert len(barriers) == 1 and "result" in barriers[0], f"barrier answered {barriers}"
        return answers

    @staticmethod
    def _check(expected: Expected, answers: list[dict[str, Any]]) -> None:
        if not expected.answered:
            assert answers == [], f"expected no response ({expected.why}), got {answers}"
            return
        assert len(answers) == 1, f"expected one response ({expected.why}), got {answers}"
        got = answers[0]["id"]
        assert type(got) is type(expected.id) and got == expected.id, (
            f"expected id {expected.id!r} ({expected.why}), got {answers[0]}"
        )
        error = answers[0].get("error")
        assert error is None or error["code"] != INTERNAL_ERROR, f"internal error: {answers[0]}"

    def _record(self, line: Line, answers: list[dict[str, Any]]) -> None:
        self.kinds[line.kind] += 1
        if not answers:
            self.codes["none"] += 1
            return
        answer = answers[0]
        if "error" in answer:
            self.codes[str(answer["error"]["code"])] += 1
            return
        self.codes["result"] += 1
        if line.method is not None:
            self.successes[line.method] += 1
            self.known.learn(line.method, line.params, answer["result"])

    def _describe(self, line: Line, expected: Expected, exc: AssertionError) -> str:
        shown = line.data if len(line.data) <= 2000 else line.data[:2000] + b"...(truncated)"
        return (
            f"line {self.lines_sent} ({line.kind}, {len(line.data)} bytes): {shown!r}\n"
            f"expected: {expected}\nproblem: {str(exc)[:3000]}\n--- stderr ---\n"
            f"{self.client.stderr_tail()}"
        )

    # -- the end -----------------------------------------------------------------------------

    def finish(self) -> dict[str, Any]:
        """Close stdin; the process must answer what is left, exit 0, and leave a sound file."""
        status = self.client.finish(timeout=LINE_TIMEOUT_S)
        for raw in self.client.drain():
            check_line(raw)
        return {
            "exit_status": status,
            "integrity_check": integrity_check(self.db),
            "index_verify": index_verify(self.db, self.models_dir),
        }

    def close(self) -> None:
        self.client.close()

    def figures(self) -> dict[str, Any]:
        return {
            "lines": self.lines_sent,
            "lines_by_kind": dict(sorted(self.kinds.items())),
            "responses_by_code": dict(sorted(self.codes.items())),
            "successes_by_method": dict(sorted(self.successes.items())),
            "server_notifications": self.server_notifications,
            "embedder": self.embedder,
            "limits": LIMITS,
        }


def integrity_check(db: Path) -> str:
    """`PRAGMA integrity_check` on a read-only connection: "ok" or the problems it lists."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()
    return "; ".join(str(row) for row in rows)


def index_verify(db: Path, models_dir: Path | None) -> str:
    """`memproc index verify`: "clean", or its report when memories, FTS and vectors drifted."""
    models = ["--models-dir", str(models_dir if models_dir is not None else db.parent / "none")]
    done = subprocess.run(
        [sys.executable, "-m", "memproc", "index", "verify", "--db", str(db), *models],
        capture_output=True,
        env=clean_env(),
        timeout=LINE_TIMEOUT_S,
        check=False,
    )
    if done.returncode == 0:
        return "clean"
    return f"exit {done.returncode}: {done.stdout.decode()} {done.stderr.decode()[-2000:]}"


def run(
    lines: int = 2_000,
    seed: int = 0,
    *,
    workdir: Path | None = None,
    models_dir: Path | None = None,
    progress: Callable[[str], object] | None = None,
) -> dict[str, Any]:
    """Fuzz `lines` lines drawn from `seed`; the figures. Raises FuzzFailure if an invariant
    breaks (the message holds the line). `progress` hears of every 10,000th line."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="memproc-fuzz-") as scratch:
            return run(lines, seed, workdir=Path(scratch), models_dir=models_dir, progress=progress)
    started = time.monotonic()
    session = FuzzSession(workdir, models_dir=models_dir)
    try:
        maker = session.line_maker(random.Random(seed))
        for number in range(1, lines + 1):
            session.send(maker.next())
            if progress is not None and number % 10_000 == 0:
                progress(f"{number} lines in {time.monotonic() - started:.0f} s")
        end = session.finish()
    finally:
        session.close()
    wall = time.monotonic() - started
    return {
        "suite": "fuzz",
        "seed": seed,
        **session.figures(),
        "unexpected_exits": 0,  # any exit before the end raises FuzzFailure instead
        **end,
        "wall_s": round(wall, 1),
        "lines_per_s": round(lines / wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lines", type=int, default=100_000, help="lines to send")
    parser.add_argument("--seed", type=int, default=1, help="seed of the line generator")
    parser.add_argument(
        "--models-dir",
        default=str(DEFAULT_MODELS) if DEFAULT_MODELS.is_dir() else "none",
        help='model cache for the server ("none": run without an embedder)',
    )
    parser.add_argument("--workdir", help="keep the database and stderr here (default: a tmp dir)")
    args = parser.parse_args(argv)
    models = None if args.models_dir == "none" else Path(args.models_dir)
    workdir = None if args.workdir is None else Path(args.workdir)
    figures = run(
        args.lines,
        args.seed,
        workdir=workdir,
        models_dir=models,
        progress=lambda text: print(text, file=sys.stderr, flush=True),
    )
    print(json.dumps(figures, indent=2))
    ok = figures["exit_status"] == 0 and figures["integrity_check"] == "ok"
    return 0 if ok and figures["index_verify"] == "clean" else 1


if __name__ == "__main__":
    sys.exit(main())
