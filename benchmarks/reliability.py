"""Every reliability suite of issue 6 at full size, one after another, with one summary.

Each suite is a driver in tests/stress/ (the contract tests run the same drivers small); this
runs each as its own command, exactly as `benchmarks/RELIABILITY.md` quotes it, collects the
JSON figures it prints, and prints the lines that page reports. A suite whose invariants
broke exits non-zero, and so does this.

    .venv/bin/python benchmarks/reliability.py                 # all suites, about 15 minutes
    .venv/bin/python benchmarks/reliability.py --suites crash,faults --out figures.json

With `--postgres URL` (a server on which that URL's user may create databases) the suites that
run on either store (POSTGRES_SUITES) run a second time on fresh PostgreSQL databases, and the
two stores' figures are printed side by side; `--postgres private` starts a private server for
the run (tests/pgkit.py: PostgreSQL 16 + pgvector from `make postgres`, stopped at the end).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
STRESS = ROOT / "tests" / "stress"

Figures = dict[str, Any]

# suite -> the driver's arguments for its full-size run
SUITES: dict[str, list[str]] = {
    "fuzz": ["stress_fuzz.py", "--lines", "100000"],
    "paths": ["stress_paths.py"],
    "crash": ["stress_crash.py", "--trials", "24"],
    # FULL beside NORMAL in one run: what the durability setting costs, and that a process
    # crash cannot tell them apart (see RELIABILITY.md)
    "crash_sync": [
        "stress_crash.py",
        "--trials",
        "24",
        "--embedder",
        "none",
        "--synchronous",
        "full",
        "--synchronous",
        "normal",
    ],
    "concurrency": ["stress_concurrency.py"],
    # a 1 ms busy timeout, so that writers really collide and the retry path is exercised
    "concurrency_busy": ["stress_concurrency.py", "--busy-timeout-ms", "1"],
    "load": ["stress_load.py"],
    "shutdown": ["stress_shutdown.py"],
    "faults": ["stress_faults.py"],
}

# The suites whose drivers take `--postgres URL` and hold PostgreSQL to the same figures.
# crash_sync compares SQLite's `synchronous` settings, which PostgreSQL does not have.
POSTGRES_SUITES = ("crash", "concurrency", "concurrency_busy")
# The figures printed side by side, per suite kind.
SIDE_BY_SIDE = {
    "crash": (
        "embedder",
        "kills",
        "kills_with_writes_in_flight",
        "acknowledged_writes",
        "acknowledged_per_s",
        "records_checked",
        "writes_lost",
        "half_applied",
        "integrity_failures",
        "index_drift",
        "replay_mismatches",
        "errors",
        "unacknowledged_present",
        "unacknowledged_absent",
        "memories_with_vectors",
        "vectors_pending_at_end",
        "write_lock_max_wait_ms",
        "wall_s",
    ),
    "concurrency": (
        "writes_attempted",
        "writes_acknowledged",
        "memories_expected",
        "memories_present",
        "busy_retries",
        "other_errors",
        "duplicates",
        "lost",
        "searches",
        "integrity_failures",
        "acknowledged_per_s",
        "wall_s",
    ),
}


def run_suite(name: str, postgres: str | None = None) -> tuple[int, list[Figures], float]:
    """(exit status, every JSON document the driver printed, seconds)."""
    arguments = [*SUITES[name][1:], *(["--postgres", postgres] if postgres else [])]
    command = [sys.executable, str(STRESS / SUITES[name][0]), *arguments]
    print(f"== {name}: {SUITES[name][0]} {' '.join(arguments)}", file=sys.stderr, flush=True)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, stdout=subprocess.PIPE, text=True, check=False)
    return done.returncode, json_documents(done.stdout), time.perf_counter() - started


def json_documents(text: str) -> list[Figures]:
    """The JSON objects in a driver's output, in order (drivers print one per configuration)."""
    decoder, documents, position = json.JSONDecoder(), [], 0
    while (start := text.find("{", position)) != -1:
        try:
            document, position = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        if isinstance(document, dict):
            documents.append(document)
    return documents


def pick(figures: Figures, *names: str) -> str:
    return ", ".join(f"{name} {figures[name]}" for name in names if name in figures)


def summarise_crash(figures: Figures) -> str:
    setting = (
        f"synchronous={figures.get('synchronous')}, embedder={figures.get('embedder')}, "
        f"{figures.get('acknowledged_per_s')} acknowledged/s"
    )
    kept = pick(
        figures,
        "trials",
        "kills",
        "kills_with_writes_in_flight",
        "acknowledged_writes",
        "records_checked",
        "writes_lost",
        "half_applied",
        "integrity_failures",
        "index_drift",
        "replay_mismatches",
        "errors",
    )
    return f"{setting}: {kept}"


def summarise_concurrency(figures: Figures) -> str:
    return pick(
        figures,
        "processes",
        "own_writes",
        "writes_acknowledged",
        "memories_expected",
        "memories_present",
        "busy_retries",
        "other_errors",
        "duplicates",
        "lost",
        "searches",
        "integrity_failures",
    )


def summarise_faults(figures: Figures) -> str:
    lines = [f"ran {figures['ran']}, skipped {len(figures['skipped'])}"]
    for name, fault in figures["faults"].items():
        errors = sorted(
            {
                f"{seen['code']} {(seen.get('reason') or seen['kind']).split(':')[0]}"
                for seen in fault["calls"].values()
                if isinstance(seen, dict) and "code" in seen
            }
        )
        lines.append(
            f"  {name}: {'; '.join(errors) or 'no errors'}; stayed up {fault['stayed_up']}, "
            f"data intact {fault['data_intact']}, foreign file untouched "
            f"{fault['foreign_file_untouched']}"
        )
    lines.append(f"  violations: {figures['violations'] or 'none'}")
    return "\n".join(lines)


def summarise_generic(figures: Figures) -> str:
    """Scalars on the first line; each nested table on a line of its own, its own nested
    tables as compact JSON (lists of per-trial rows are left to the --out file)."""
    scalars = [f"{k} {v}" for k, v in figures.items() if isinstance(v, int | float | str)]
    lines = [", ".join(scalars)] if scalars else []
    for key, value in figures.items():
        if isinstance(value, dict):
            lines.append(f"  {key}: {compact(value)}")
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            lines += [f"  {key}: {compact(row)}" for row in value]
    return "\n".join(lines)


def compact(table: dict[str, Any]) -> str:
    parts = []
    for key, value in table.items():
        if isinstance(value, list) and len(value) > 8:
            continue
        text = value if isinstance(value, int | float | str) else json.dumps(value)
        parts.append(f"{key} {text}")
    return ", ".join(parts)


SUMMARIES: dict[str, Callable[[Figures], str]] = {
    "crash": summarise_crash,
    "crash_sync": summarise_crash,
    "concurrency": summarise_concurrency,
    "concurrency_busy": summarise_concurrency,
    "faults": summarise_faults,
}


def report(name: str, status: int, documents: list[Figures], seconds: float) -> None:
    summarise = SUMMARIES.get(name.removesuffix(ON_POSTGRES), summarise_generic)
    print(f"\n## {name} (exit {status}, {seconds:.0f} s)")
    for document in documents:
        print(summarise(document))


ON_POSTGRES = "@postgres"


def side_by_side(name: str, sqlite: list[Figures], postgres: list[Figures]) -> None:
    """One table per configuration the driver ran: each figure on SQLite and on PostgreSQL."""
    names = SIDE_BY_SIDE[name.removesuffix("_busy")]
    for left, right in zip(sqlite, postgres, strict=False):
        print(f"\n## {name}: SQLite | PostgreSQL")
        print("| figure | SQLite | PostgreSQL |\n| --- | --- | --- |")
        for figure in names:
            if figure in left or figure in right:
                print(f"| {figure} | {left.get(figure, '-')} | {right.get(figure, '-')} |")


@contextmanager
def postgres_server(where: str | None) -> Iterator[str | None]:
    """The server URL the PostgreSQL runs use: the one given, or a private one started here."""
    if where != "private":
        yield where
        return
    sys.path.insert(0, str(ROOT / "tests"))
    from pgkit import running_server

    with running_server() as server:
        yield server.url


def print_side_by_side(suites: dict[str, Any]) -> None:
    for name in POSTGRES_SUITES:
        if name in suites and name + ON_POSTGRES in suites:
            side_by_side(name, suites[name]["figures"], suites[name + ON_POSTGRES]["figures"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(SUITES), help="comma-separated")
    parser.add_argument("--out", type=Path, help="write every suite's figures here as JSON")
    parser.add_argument("--summarise", type=Path, help="print the summary of an --out file")
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="also run the suites that support it on PostgreSQL databases created on this "
        "server ('private': start one)",
    )
    args = parser.parse_args()
    if args.summarise:
        suites = json.loads(args.summarise.read_text())
        for name, suite in suites.items():
            report(name, suite["exit"], suite["figures"], suite["seconds"])
        print_side_by_side(suites)
        return 0
    names = [name.strip() for name in args.suites.split(",") if name.strip()]
    unknown = sorted(set(names) - set(SUITES))
    if unknown:
        parser.error(f"unknown suites: {', '.join(unknown)}; known: {', '.join(SUITES)}")
    collected: dict[str, Any] = {}
    failed = []
    with postgres_server(args.postgres) as server_url:
        for name in names:
            runs = [(name, None)]
            if server_url and name in POSTGRES_SUITES:
                runs.append((name + ON_POSTGRES, server_url))
            for label, postgres in runs:
                status, documents, seconds = run_suite(name, postgres)
                collected[label] = {
                    "exit": status,
                    "seconds": round(seconds, 1),
                    "figures": documents,
                }
                report(label, status, documents, seconds)
                if status != 0 or not documents:
                    failed.append(label)
    print_side_by_side(collected)
    if args.out:
        args.out.write_text(json.dumps(collected, indent=2) + "\n")
    print(f"\nsuites failed: {', '.join(failed) or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
