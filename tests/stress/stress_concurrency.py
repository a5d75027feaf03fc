"""Concurrency: several real `memproc serve` processes on one database file, each pipelining its
own writes interleaved with searches, plus idempotent writes that every process sends at the
same moment. Afterwards every write is present once, from every process's point of view.

Each process gets a plan (seeded): its own `memory.remember` writes, each with a client token;
a search after every few writes; a replay of one of its recent writes now and then (often still
in flight beside the original); and, at the same points in every plan, shared writes that all
processes send at once, half keyed by a shared client token, half by identical content with no
token (memproc's other idempotency rule). A driver thread per process keeps `window` requests
in flight. The only error a client may see is -32000 storage_busy (retryable), and the driver
then sends the same request again; each such retry is counted. Any other error is a failure.

Checks: for every idempotency key, all answers name one id and exactly one says `created`;
each process lists exactly the expected memories (each once, with its content); every process
exits 0 on EOF; `PRAGMA integrity_check` passes on the file.

On PostgreSQL (`database` a `postgresql://` URL, or `--postgres URL` in the long mode) the
processes share one database instead of one file, and every write of every process takes the
store's one advisory lock, so the shared scope's writes are serialised by that lock; the
integrity check is `PgStore.integrity_check` (tests/stress/pg_target.py). SQLite's busy
timeout has no meaning there: `--busy-timeout-ms` then sets the lock wait (PostgreSQL's
`lock_timeout`, with no statement timeout, which memproc would otherwise use as the floor), so
that the writers refuse each other's lock and the -32000 retry path is exercised the same way.

Long mode (the figures for benchmarks/RELIABILITY.md):
    .venv/bin/python tests/stress/stress_concurrency.py --processes 4 --writes 1000
`--busy-timeout-ms 1` shrinks SQLite's busy wait so that the -32000 retry path is exercised.
    .venv/bin/python tests/stress/stress_concurrency.py --postgres postgresql://user@host/db
runs the same on a fresh database that it creates on that server (and drops afterwards).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import deque
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (puts tests/contract on sys.path when run as a script)
import apsw
import pg_target
from client import Client, check_stream, clean_env, memproc_argv
from paging import every_item

SCOPE = "shared"
STORAGE_BUSY = -32000
RESPONSE_TIMEOUT = 120.0
MAX_RETRIES = 10_000  # busy answers one request may get before it counts as an error
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india")
MUST_BE_ZERO = ("lost", "duplicates", "other_errors", "integrity_failures", "stream_errors")


@dataclass(frozen=True)
class Sizes:
    processes: int = 4
    writes: int = 1000  # each process's own writes
    shared: int = 20  # shared writes every process sends (half by token, half by content)
    search_every: int = 4
    replay_every: int = 10
    window: int = 32  # requests each driver keeps in flight


@dataclass
class Op:
    """One request of a plan. `key` names a remember's idempotency key (its client token, or
    its kind and content when it has none); a search has no key."""

    method: str
    params: dict[str, Any]
    key: str | None = None
    kind: str = "search"  # "own", "replay", "shared" or "search"


@dataclass
class Outcome:
    """What one process's driver saw."""

    answers: list[tuple[Op, dict[str, Any]]] = field(default_factory=list)  # remembers only
    write_attempts: int = 0  # remember requests sent, retries excluded
    busy_retries: int = 0
    searches: int = 0
    errors: list[str] = field(default_factory=list)


# -- plans ---------------------------------------------------------------------------------------


def remember(content: str, token: str | None, kind: str) -> Op:
    params: dict[str, Any] = {"scope": SCOPE, "kind": "fact", "content": content}
    if token is not None:
        params["client_token"] = token
    key = f"token:{token}" if token is not None else f"content:fact:{content}"
    return Op("memory.remember", params, key, kind)


def plan(process: int, sizes: Sizes, rng: random.Random) -> list[Op]:
    """This process's requests, in order. The shared writes come first, in the same order in
    every plan, so that the processes, released together, send them at the same moment."""
    ops = [_shared(number) for number in range(sizes.shared)]
    own: list[Op] = []
    for i in range(sizes.writes):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 12)))
        write = remember(f"process {process} write {i}: {words}", f"p{process}-{i}", "own")
        own.append(write)
        ops.append(write)
        if i % sizes.replay_every == sizes.replay_every - 1:
            original = rng.choice(own[-sizes.window :])
            ops.append(Op(original.method, original.params, original.key, "replay"))
        if i % sizes.search_every == 0:
            ops.append(_search(rng))
    return ops


def _shared(number: int) -> Op:
    if number % 2:
        return remember(f"shared by token {number}", f"shared-{number}", "shared")
    return remember(f"shared by content {number}", None, "shared")


def _search(rng: random.Random) -> Op:
    query = " ".join(rng.sample(WORDS, 2))
    params = {"scope": SCOPE, "query": query, "mode": "lexical", "limit": 5}
    return Op("memory.search", params)


# -- driving one process -------------------------------------------------------------------------


def drive(client: Client, ops: list[Op], window: int, outcome: Outcome) -> None:
    """Keep `window` requests in flight; a storage_busy answer sends the same request again."""
    todo = deque(ops)
    in_flight: deque[tuple[Any, Op]] = deque()
    retries: dict[int, int] = {}
    outcome.write_attempts = sum(op.method == "memory.remember" for op in ops)
    while todo or in_flight:
        while todo and len(in_flight) < window:
            op = todo.popleft()
            in_flight.append((client.request(op.method, op.params), op))
        request_id, op = in_flight.popleft()
        response = client.wait_for(request_id, RESPONSE_TIMEOUT)
        busy = _is_busy(response)
        if busy and retries.get(id(op), 0) < MAX_RETRIES:
            retries[id(op)] = retries.get(id(op), 0) + 1
            outcome.busy_retries += 1
            todo.append(op)
        elif "error" in response:
            outcome.errors.append(f"{op.method} {op.key}: {response['error']}")
        elif op.method == "memory.search":
            outcome.searches += 1
        else:
            outcome.answers.append((op, response["result"]))


def _is_busy(response: dict[str, Any]) -> bool:
    error = response.get("error") or {}
    return error.get("code") == STORAGE_BUSY and error.get("data", {}).get("retryable") is True


def drive_all(clients: list[Client], plans: list[list[Op]], window: int) -> list[Outcome]:
    """One thread per process, all released at once; an exception in one is re-raised."""
    outcomes = [Outcome() for _ in clients]
    failures: list[BaseException] = []
    start = threading.Barrier(len(clients))

    def work(index: int) -> None:
        try:
            clients[index].ping(RESPONSE_TIMEOUT)  # started and migrated: ready to race
            start.wait()
            drive(clients[index], plans[index], window, outcomes[index])
        except BaseException as exc:
            start.abort()  # the others stop waiting for this one
            failures.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
    return outcomes


# -- checking ------------------------------------------------------------------------------------


@dataclass
class Expected:
    """The memory each idempotency key must name, from every answer any process got."""

    ids: dict[str, str] = field(default_factory=dict)  # key -> id
    contents: dict[str, str] = field(default_factory=dict)  # id -> content
    duplicates: list[str] = field(default_factory=list)


def expected_memories(outcomes: list[Outcome]) -> Expected:
    by_key: dict[str, list[tuple[Op, dict[str, Any]]]] = {}
    for outcome in outcomes:
        for op, result in outcome.answers:
            assert op.key is not None
            by_key.setdefault(op.key, []).append((op, result))
    expected = Expected()
    for key, answers in by_key.items():
        ids = {result["id"] for _, result in answers}
        created = sum(result["created"] for _, result in answers)
        if len(ids) != 1 or created != 1:
            expected.duplicates.append(f"{key}: ids {sorted(ids)}, created {created} times")
        memory_id = answers[0][1]["id"]
        expected.ids[key] = memory_id
        expected.contents[memory_id] = answers[0][0].params["content"]
    return expected


@dataclass
class Listing:
    """How one process's `memory.list` compares with the expected memories."""

    present: int = 0  # expected memories listed with their content
    missing: list[str] = field(default_factory=list)  # expected, but absent or changed
    extra: list[str] = field(default_factory=list)  # listed twice, or not expected at all


def compare_listing(client: Client, expected: Expected) -> Listing:
    items = every_item(client, "memory.list", {"scope": SCOPE}, timeout=RESPONSE_TIMEOUT)
    listed = {item["id"]: item["content"] for item in items}
    listing = Listing()
    for memory_id, content in expected.contents.items():
        if listed.get(memory_id) == content:
            listing.present += 1
        else:
            listing.missing.append(f"{client.name}: {memory_id} missing or changed")
    if len(listed) != len(items):
        listing.extra.append(f"{client.name}: {len(items) - len(listed)} listed twice")
    listing.extra += [
        f"{client.name}: unexpected {i}" for i in listed if i not in expected.contents
    ]
    return listing


def integrity(db: Path | str) -> list[str]:
    if pg_target.is_postgres(db):
        return pg_target.integrity(str(db))
    conn = apsw.Connection(str(db))
    try:
        return [row[0] for row in conn.execute("PRAGMA integrity_check")]
    finally:
        conn.close()


# -- the run -------------------------------------------------------------------------------------


def run(
    *,
    sizes: Sizes | None = None,
    seed: int = 1,
    busy_timeout_ms: int | None = None,
    directory: Path | None = None,
    database: Path | str | None = None,
) -> dict[str, Any]:
    """Run the processes to the end and check; the figures (see MUST_BE_ZERO). `database`:
    an SQLite path or an empty PostgreSQL database's URL (default: a file in `directory`)."""
    sizes = sizes or Sizes()
    rng = random.Random(seed)
    plans = [plan(number, sizes, rng) for number in range(sizes.processes)]
    with tempfile.TemporaryDirectory(prefix="memproc-concurrency-") as scratch:
        where = directory or Path(scratch)
        db = database or where / "shared.db"
        env = clean_env()
        if busy_timeout_ms is not None:
            env["MEMPROC_BUSY_TIMEOUT_MS"] = str(busy_timeout_ms)
            if pg_target.is_postgres(db):
                env["MEMPROC_DB_STATEMENT_TIMEOUT_MS"] = "0"  # the lock wait is then the busy one
        clients = [_start(db, where, env, number) for number in range(sizes.processes)]
        try:
            started = time.monotonic()
            outcomes = drive_all(clients, plans, sizes.window)
            seconds = time.monotonic() - started
            expected = expected_memories(outcomes)
            listings = [compare_listing(client, expected) for client in clients]
            statuses = [client.finish(RESPONSE_TIMEOUT) for client in clients]
        finally:
            for client in clients:
                client.close()
        stream_errors = _stream_errors(clients)
        report = Report(outcomes, expected, listings, statuses, stream_errors, integrity(db))
        return _figures(
            sizes, report, seconds, "postgres" if pg_target.is_postgres(db) else "sqlite"
        )


def _start(db: Path | str, directory: Path, env: dict[str, str], number: int) -> Client:
    return Client(
        memproc_argv(db, "--max-pending", "1000", workdir=directory),
        stderr_path=directory / f"stderr-{number + 1}.log",
        env=env,
        name=f"memproc#{number + 1}",
    )


def _stream_errors(clients: list[Client]) -> list[str]:
    errors = []
    for client in clients:
        try:
            check_stream(client)
        except AssertionError as exc:
            errors.append(f"{client.name}: {exc}")
    return errors


@dataclass
class Report:
    outcomes: list[Outcome]
    expected: Expected
    listings: list[Listing]
    statuses: list[int]
    stream_errors: list[str]
    integrity: list[str]

    def errors(self) -> list[str]:
        errors = [error for outcome in self.outcomes for error in outcome.errors]
        return errors + [f"#{i + 1} exited {s}" for i, s in enumerate(self.statuses) if s != 0]


def _figures(sizes: Sizes, report: Report, seconds: float, store: str) -> dict[str, Any]:
    outcomes, listings = report.outcomes, report.listings
    answers = [(op, result) for outcome in outcomes for op, result in outcome.answers]
    errors = report.errors()
    missing = [problem for listing in listings for problem in listing.missing]
    extra = [problem for listing in listings for problem in listing.extra]
    return {
        "suite": "concurrency",
        "store": store,
        "processes": sizes.processes,
        "writes_per_process": sizes.writes,
        "own_writes": sizes.processes * sizes.writes,
        "own_writes_acknowledged": sum(1 for op, _ in answers if op.kind == "own"),
        "writes_attempted": sum(outcome.write_attempts for outcome in outcomes),
        "writes_acknowledged": len(answers),
        "replays": sum(1 for op, _ in answers if op.kind == "replay"),
        "shared_keys": sizes.shared,
        "shared_attempts": sum(1 for op, _ in answers if op.kind == "shared"),
        "memories_expected": len(report.expected.contents),
        "memories_present": min(listing.present for listing in listings),
        "busy_retries": sum(outcome.busy_retries for outcome in outcomes),
        "other_errors": len(errors),
        "duplicates": len(report.expected.duplicates) + len(extra),
        "lost": len(missing),
        "searches": sum(outcome.searches for outcome in outcomes),
        "integrity_failures": 0 if report.integrity == ["ok"] else 1,
        "stream_errors": len(report.stream_errors),
        "wall_s": round(seconds, 1),
        "acknowledged_per_s": round(len(answers) / max(seconds, 1e-9), 1),
        "problems": (errors + report.expected.duplicates + extra + missing)[:50]
        + report.stream_errors[:5]
        + ([] if report.integrity == ["ok"] else report.integrity[:5]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=Sizes.processes)
    parser.add_argument("--writes", type=int, default=Sizes.writes, help="per process")
    parser.add_argument("--shared", type=int, default=Sizes.shared)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--busy-timeout-ms", type=int, default=None)
    parser.add_argument(
        "--postgres",
        metavar="URL",
        help="run on a fresh database created on this PostgreSQL server (default: SQLite)",
    )
    args = parser.parse_args(argv)
    sizes = Sizes(processes=args.processes, writes=args.writes, shared=args.shared)
    with ExitStack() as stack:
        database = None
        if args.postgres:
            database = stack.enter_context(pg_target.fresh_database(args.postgres))
        figures = run(
            sizes=sizes, seed=args.seed, busy_timeout_ms=args.busy_timeout_ms, database=database
        )
    print(json.dumps(figures, indent=2))
    return 1 if any(figures[name] for name in MUST_BE_ZERO) else 0


if __name__ == "__main__":
    sys.exit(main())
