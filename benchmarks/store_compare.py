"""The PostgreSQL store beside the SQLite store, in one run (issue 17): what
`search_speed.py --store URL` adds to its figures.

    python benchmarks/search_speed.py --store local          # a private server, started here
    python benchmarks/search_speed.py --store postgresql://user@host/db

For each size, the same synthetic store (search_speed's texts and vectors) is written to an
SQLite file and to a fresh PostgreSQL database through the store's own write path, and:
- hybrid `memory.search` latency, p50 and p95, both stores' queries interleaved one by one, each
  process with the embedder loaded and its in-memory vector copy warm;
- ingest one memory at a time (`memory.remember`, timed until its vectors are written), both
  stores in alternating blocks;
- 8 `memproc serve` processes writing to one store at once (`memory.remember`, no embedder),
  the aggregate rate and whether every acknowledged write is there afterwards.

`local` starts a server with the test kit (tests/pgkit.py) but durable, as a deployment runs:
fsync, synchronous_commit and full_page_writes on, as SQLite runs with synchronous=FULL. A URL
names a server where the benchmark may create and drop databases named `memproc_speed_*`.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import orjson
import psycopg

import common
from memproc.config import Config
from memproc.models.embedder import Embedder
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.runtime import Runtime
from memproc.store.postgres.database import redact
from memproc.wire.messages import RememberParams, SearchParams

REPO = Path(__file__).resolve().parent.parent
SCOPE = "speed"
DURABLE = {"fsync": "on", "synchronous_commit": "on", "full_page_writes": "on"}
WRITERS = 8


def fresh_database(url: str, name: str) -> str:
    return common.fresh_database(url, name)


def settle(url: str) -> None:
    """VACUUM ANALYZE after the bulk fill: the state autovacuum brings a server to between
    bursts of writes (statistics current, the visibility map set, so the posting lists are read
    from their index alone); without it the first minutes after a bulk load are measured."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def _runtime(db: str, models_dir: str) -> Runtime:
    runtime = Runtime(Config(db=db, models_dir=models_dir, reranker="none"))
    runtime.open_store()
    runtime.models.load_now()
    return runtime


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q))


Fill = Callable[[str, int, Embedder, np.random.Generator], None]
Warm = Callable[[Runtime], None]


def timed_ms(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return (time.perf_counter() - started) * 1000


def compare_search(
    sqlite_db: str, pg_db: str, models_dir: str, queries: list[str], warm: Warm
) -> dict[str, dict[str, float]]:
    """Hybrid search latency on both stores, their queries interleaved."""
    runtimes = {
        "sqlite": _runtime(sqlite_db, models_dir),
        "postgres": _runtime(pg_db, models_dir),
    }
    contexts = {name: OpContext(runtime=rt) for name, rt in runtimes.items()}

    def search(name: str, query: str) -> None:
        params = SearchParams(scope=SCOPE, query=query, mode="hybrid", limit=10)
        search_ops.search(contexts[name], params)

    for name, runtime in runtimes.items():
        search(name, queries[0])
        warm(runtime)
        search(name, queries[0])
    times: dict[str, list[float]] = {name: [] for name in runtimes}
    for number, query in enumerate(queries):
        order = list(runtimes) if number % 2 == 0 else list(reversed(runtimes))
        for name in order:
            times[name].append(timed_ms(lambda n=name, q=query: search(n, q)))
    for runtime in runtimes.values():
        runtime.close()
    return {
        name: {"p50": percentile(values, 50), "p95": percentile(values, 95)}
        for name, values in times.items()
    }


def compare_ingest_one(
    sqlite_db: str, pg_db: str, models_dir: str, sample: list[str], blocks: int = 6
) -> dict[str, float]:
    """Memories per second searchable by meaning, one `memory.remember` per call, both stores
    in alternating blocks."""
    runtimes = {
        "sqlite": _runtime(sqlite_db, models_dir),
        "postgres": _runtime(pg_db, models_dir),
    }
    spent = dict.fromkeys(runtimes, 0.0)
    size = max(1, len(sample) // blocks)
    for number, first in enumerate(range(0, len(sample), size)):
        block = sample[first : first + size]
        order = list(runtimes) if number % 2 == 0 else list(reversed(runtimes))
        for name in order:
            runtime = runtimes[name]
            ctx = OpContext(runtime=runtime)
            started = time.perf_counter()
            for text in block:
                memory_ops.remember(ctx, RememberParams(scope=SCOPE, kind="note", content=text))
            if not runtime.vectors.caught_up(600.0):
                raise SystemExit(f"{name}: vectors did not catch up")
            spent[name] += time.perf_counter() - started
    for runtime in runtimes.values():
        runtime.close()
    return {name: len(sample) / seconds for name, seconds in spent.items()}


def writers_at_once(db: str, empty_models: str, per_writer: int) -> dict[str, float]:
    """`WRITERS` processes, each sending `per_writer` remembers one after another; the
    aggregate rate, and the memories found afterwards (all must be there)."""
    argv = [sys.executable, "-m", "memproc", "serve", "--db", db, "--models-dir", empty_models]
    children = [
        subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
        )
        for _ in range(WRITERS)
    ]
    for child in children:  # each answers a ping once it is up: start timing after all are
        _ask(child, {"jsonrpc": "2.0", "id": 0, "method": "ping"})
    started = time.perf_counter()
    acknowledged = 0
    for number in range(per_writer):
        for index, child in enumerate(children):
            request = {
                "jsonrpc": "2.0",
                "id": number + 1,
                "method": "memory.remember",
                "params": {
                    "scope": SCOPE,
                    "kind": "note",
                    "content": f"writer {index} note {number}",
                    "client_token": f"w{index}-{number}",
                },
            }
            _send(child, request)
        for child in children:
            assert child.stdout is not None
            reply = orjson.loads(child.stdout.readline())
            acknowledged += "result" in reply
    elapsed = time.perf_counter() - started
    for child in children:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=60)
    return {"rate": acknowledged / elapsed, "acknowledged": acknowledged, "found": _count(db)}


def _send(child: subprocess.Popen[bytes], request: dict[str, object]) -> None:
    assert child.stdin is not None
    child.stdin.write(orjson.dumps(request) + b"\n")
    child.stdin.flush()


def _ask(child: subprocess.Popen[bytes], request: dict[str, object]) -> dict[str, object]:
    _send(child, request)
    assert child.stdout is not None
    reply: dict[str, object] = orjson.loads(child.stdout.readline())
    return reply


def _count(db: str) -> int:
    sql = "SELECT count(*) FROM memories WHERE scope = 'speed'"
    if db.startswith("postgresql://"):
        with psycopg.connect(db) as conn:
            row = conn.execute(sql).fetchone()
            return int(row[0]) if row else 0
    import apsw

    conn = apsw.Connection(db)
    try:
        return int(conn.execute(sql).get or 0)
    finally:
        conn.close()


def run(
    args: argparse.Namespace,
    tmp: str,
    embedder: Embedder,
    queries: list[str],
    sample: list[str],
    fill: Fill,
    warm: Warm,
) -> None:
    """Everything above, printed side by side."""
    sizes = [int(s) for s in args.sizes.split(",")]
    models_dir: str = args.models_dir
    with common.postgres_server(args.store, DURABLE) as server_url:
        assert server_url is not None
        url = server_url
        print(f"postgresql store: {redact(url)}", file=sys.stderr)
        for size in sizes:
            sqlite_db = os.path.join(tmp, f"compare-{size}.db")
            pg_db = fresh_database(url, f"memproc_speed_{size}")
            for db in (sqlite_db, pg_db):
                started = time.perf_counter()
                fill(db, size, embedder, np.random.default_rng(11))
                if db is pg_db:
                    settle(pg_db)
                where = "postgres" if db is pg_db else "sqlite"
                elapsed = time.perf_counter() - started
                print(f"filled {size} ({where}) in {elapsed:.1f} s", file=sys.stderr)
            figures = compare_search(sqlite_db, pg_db, models_dir, queries, warm)
            s, p = figures["sqlite"], figures["postgres"]
            print(
                f"hybrid search @ {size:>7}: sqlite p50 {s['p50']:6.1f} ms p95 {s['p95']:6.1f} ms"
                f" | postgres p50 {p['p50']:6.1f} ms p95 {p['p95']:6.1f} ms"
                f" | p50 ratio {p['p50'] / s['p50']:4.2f}x"
            )
        one = sample[: args.ingest_one]
        rates = compare_ingest_one(
            os.path.join(tmp, "one.db"), fresh_database(url, "memproc_speed_one"), models_dir, one
        )
        print(
            f"ingest one at a time ({len(one)} memories, searchable by meaning): sqlite "
            f"{rates['sqlite']:.1f}/s | postgres {rates['postgres']:.1f}/s"
        )
        empty = os.path.join(tmp, "no-models")
        os.makedirs(empty, exist_ok=True)
        per_writer: int = args.writer_notes
        for name, db in (
            ("sqlite", os.path.join(tmp, "writers.db")),
            ("postgres", fresh_database(url, "memproc_speed_writers")),
        ):
            done = writers_at_once(db, empty, per_writer)
            print(
                f"{WRITERS} processes writing at once ({name}): {done['rate']:.0f} remembers/s "
                f"in all; acknowledged {done['acknowledged']}, found {done['found']} "
                f"({'none lost' if done['found'] == done['acknowledged'] else 'LOST WRITES'})"
            )
