"""Search and ingest speed, each beside its floor measured in the same run.

    python benchmarks/search_speed.py [--sizes 10000,100000] [--queries 200]
                                      [--models-dir .cache/models] [--ingest-sample 2000]
                                      [--ingest-one 300]

Every floor is the fastest way to do the same work with the same libraries, built without
memproc's settings (HOUSE_STYLE 17): embeddings come from the fastest onnxruntime
configuration of `ortfloor.py`, chosen in this run for each workload (one query; 64 texts).

Figures (medians and p95 over interleaved runs, so machine noise hits both sides alike):
- hybrid `memory.search` latency at each size, beside the floor: the query embedded by the
  best onnxruntime configuration + numpy brute-force top-k over the same vectors + the raw
  FTS5 bm25 query;
- ingest one memory at a time: `memory.remember` (the row committed, then the answer, then
  its vectors embedded by the worker; timed until they are written), beside the best
  onnxruntime call on the same text + one SQLite commit (WAL, `synchronous=FULL` as memproc's
  default) of its text and vector, in alternating blocks;
- ingest in bulk: `memory.remember_batch` with embedding, beside the best onnxruntime
  configuration embedding the same texts in length-sorted batches of 64 (nothing stored);
- the first search sent right after spawning `memproc serve` on the largest store;
- resident memory of that process with the embedder loaded, before and after its in-memory
  copy of the vectors is warm, and its peak (VmHWM).

The stores are filled through the store's own write path, with synthetic text (a fixed
vocabulary, Zipf-distributed) and vectors made from a pool of real embeddings with small
noise: embedding 100,000 texts for real would take most of an hour here and changes nothing
about search latency. Ingest throughput is measured for real on its own sample.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import apsw
import numpy as np

import common
import ortfloor
from memproc.config import Config
from memproc.models.embedder import Embedder
from memproc.models.pull import pull
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.indexing import VectorIndex
from memproc.retrieval.query import lexical_match
from memproc.runtime import Runtime
from memproc.store import vectors as vector_sql
from memproc.store.connection import sqlite_vec_path
from memproc.wire.messages import (
    RememberBatchParams,
    RememberItem,
    RememberParams,
    SearchParams,
)

REPO = Path(__file__).resolve().parent.parent
MODEL = "minilm-l6-int8"
SCOPE = "speed"
POOL_SIZE = 500
FILL_BATCH = 5_000


# -- synthetic text ---------------------------------------------------------------------------


def vocabulary(size: int, rng: np.random.Generator) -> list[str]:
    syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(syllables, size=int(rng.integers(1, 4)))))
    return sorted(words)


def texts(
    count: int, words: list[str], rng: np.random.Generator, span: tuple[int, int]
) -> list[str]:
    weights = 1.0 / np.arange(1, len(words) + 1)
    weights /= weights.sum()
    lengths = rng.integers(span[0], span[1], size=count)
    return [" ".join(rng.choice(words, size=int(n), p=weights)) for n in lengths]


# -- filling a store --------------------------------------------------------------------------


def fill_store(db: str, size: int, embedder: Embedder, rng: np.random.Generator) -> None:
    """`size` memories with vectors, through the store's write functions."""
    words = vocabulary(5_000, rng)
    runtime = Runtime(Config(db=db, embedder="none", reranker="none"))
    runtime.open_store()
    store = runtime.store()
    pool = embedder.embed_documents(texts(POOL_SIZE, words, rng, (15, 40)))
    row = VectorIndex(store, embedder).row()
    made = 0
    while made < size:
        batch = texts(min(FILL_BATCH, size - made), words, rng, (15, 40))
        noise = rng.normal(scale=0.05, size=(len(batch), embedder.dims)).astype(np.float32)
        vectors = pool[rng.integers(0, POOL_SIZE, size=len(batch))] + noise
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with store.writing() as conn:
            for content, vector in zip(batch, vectors, strict=True):
                common.insert_synthetic_note(conn, SCOPE, content, vector, row)
        made += len(batch)
    runtime.close()


# -- the floor --------------------------------------------------------------------------------


class Floor:
    """What any hybrid search must at least do: embed the query (with the fastest onnxruntime
    configuration), score every vector, run the FTS5 query. Measured on the same data.

    Each part is timed alone and the vectors are scored both ways numpy can (BLAS's threaded
    sgemv and einsum on the calling thread), counting the faster each time: which wins
    depends on the store's size and on what else the machine is doing at that moment, and a
    floor must be the best of them, not one chosen in advance."""

    def __init__(self, db: str, embedder: ortfloor.OrtEmbedder, pool: int) -> None:
        self.embedder = embedder
        self.pool = pool
        self.conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
        self.conn.enable_load_extension(True)
        self.conn.load_extension(sqlite_vec_path())
        table = self.conn.execute("SELECT id FROM embedders").get
        rows = self.conn.execute(f"SELECT embedding FROM vec_embedder_{table}").fetchall()
        self.matrix = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32)
        self.matrix = self.matrix.reshape(len(rows), -1)

    def search_time(self, query: str) -> float:
        started = time.perf_counter()
        vector = self.embedder.embed([self.embedder.query_prefix + query])[0]
        embedded = time.perf_counter()
        scoring = min(
            timed(lambda s=score: self._top(s(self.matrix, vector))) for score in SCORINGS.values()
        )
        match = lexical_match(query) or '""'
        lexical_started = time.perf_counter()
        self.conn.execute(
            "SELECT rowid, bm25(memories_fts) AS s FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY s LIMIT ?",
            (match, self.pool),
        ).fetchall()
        return (embedded - started) + scoring + (time.perf_counter() - lexical_started)

    def _top(self, scores: np.ndarray) -> np.ndarray:
        top = np.argpartition(-scores, self.pool)[: self.pool]
        return top[np.argsort(-scores[top])]

    def close(self) -> None:
        self.conn.close()


SCORINGS: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "matrix @ vector (BLAS sgemv)": lambda m, v: m @ v,
    "einsum, no BLAS": lambda m, v: np.einsum("ij,j->i", m, v, optimize=False),
}


# -- measurements -----------------------------------------------------------------------------


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def measure_search(
    db: str, models_dir: str, queries: list[str], query_floor: ortfloor.OrtEmbedder
) -> dict[str, float]:
    runtime = Runtime(Config(db=db, models_dir=models_dir, reranker="none"))
    runtime.open_store()
    runtime.models.load_now()
    ctx = OpContext(runtime=runtime)
    floor = Floor(db, query_floor, runtime.config.candidate_pool)

    def memproc_search(query: str) -> None:
        search_ops.search(ctx, SearchParams(scope=SCOPE, query=query, mode="hybrid", limit=10))

    memproc_search(queries[0])
    warm_until_loaded(runtime)
    memproc_search(queries[0])
    floor.search_time(queries[0])
    ours, floors = [], []
    for query in queries:  # interleaved
        ours.append(timed(lambda q=query: memproc_search(q)))
        floors.append(floor.search_time(query))
    floor.close()
    runtime.close()
    return {
        "memproc_p50": percentile(ours, 50),
        "memproc_p95": percentile(ours, 95),
        "floor_p50": percentile(floors, 50),
        "floor_p95": percentile(floors, 95),
    }


def warm_until_loaded(runtime: Runtime, deadline_s: float = 120.0) -> None:
    with runtime.store().reading() as conn:
        row = vector_sql.all_embedders(conn)[0]
    cache = runtime.vectors.dense_cache(row)
    stop = time.monotonic() + deadline_s
    while not cache.loaded and time.monotonic() < stop:
        time.sleep(0.05)


def measure_ingest(
    models_dir: str, sample: list[str], runs: int, batch_floor: ortfloor.OrtEmbedder
) -> dict[str, float]:
    """memproc remember_batch (chunking, embedding, pooling, SQLite writes) vs the fastest
    onnxruntime configuration embedding the same texts (nothing stored)."""
    raw, ours = [], []
    for _ in range(runs):
        raw.append(timed(lambda: ortfloor.embed_all(batch_floor, sample)))
        with tempfile.TemporaryDirectory() as tmp:
            ours.append(
                timed(lambda: memproc_ingest(os.path.join(tmp, "i.db"), models_dir, sample))
            )
    tokens = sum(len(e.ids) for e in batch_floor.tokenizer.encode_batch(sample))
    return {
        "raw_s": statistics.median(raw),
        "memproc_s": statistics.median(ours),
        "tokens": tokens,
        "items": len(sample),
    }


class CommitFloor:
    """One memory the fastest way: the best onnxruntime call on its text, then its text and
    vector written in one SQLite transaction (WAL, synchronous=FULL, as memproc's defaults)."""

    def __init__(self, db: str, embedder: ortfloor.OrtEmbedder) -> None:
        self.embedder = embedder
        self.conn = apsw.Connection(db)
        self.conn.pragma("journal_mode", "wal")
        self.conn.pragma("synchronous", "full")
        self.conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, content TEXT, vec BLOB)")

    def remember(self, text: str) -> None:
        vector = self.embedder.embed([self.embedder.document_prefix + text])[0]
        with self.conn:
            self.conn.execute(
                "INSERT INTO notes (content, vec) VALUES (?, ?)", (text, vector.tobytes())
            )

    def close(self) -> None:
        self.conn.close()


def measure_ingest_one(
    models_dir: str, sample: list[str], one_floor: ortfloor.OrtEmbedder, blocks: int = 6
) -> dict[str, float]:
    """`memory.remember` one memory per call against CommitFloor, in alternating blocks.

    A remember is answered once its row commits and its vectors follow on memproc's worker,
    so a block of memproc's is timed until `caught_up` says every vector is written: the rate
    is of memories searchable by meaning. Blocks, not memory by memory: the floor's inference
    between two remembers would take the core the worker runs on. Which side goes first
    alternates, so the machine's drift hits both alike.
    """
    with tempfile.TemporaryDirectory() as tmp:
        runtime = Runtime(
            Config(db=os.path.join(tmp, "one.db"), models_dir=models_dir, reranker="none")
        )
        runtime.open_store()
        runtime.models.load_now()
        ctx = OpContext(runtime=runtime)
        floor = CommitFloor(os.path.join(tmp, "floor.db"), one_floor)

        def remember(text: str) -> None:
            memory_ops.remember(ctx, RememberParams(scope=SCOPE, kind="note", content=text))

        def ours_block(block: list[str]) -> None:
            for text in block:
                answers.append(timed(lambda t=text: remember(t)))
            if not runtime.vectors.caught_up(600.0):
                raise SystemExit("memproc's vectors did not catch up")

        def floor_block(block: list[str]) -> None:
            for text in block:
                floors.append(timed(lambda t=text: floor.remember(t)))

        remember("warm-up")
        runtime.vectors.caught_up(600.0)
        floor.remember("warm-up")
        answers: list[float] = []
        floors: list[float] = []
        ours_s = floor_s = 0.0
        size = max(1, len(sample) // blocks)
        for number, first in enumerate(range(0, len(sample), size)):
            block = sample[first : first + size]
            order = [ours_block, floor_block] if number % 2 == 0 else [floor_block, ours_block]
            for run in order:
                spent = timed(lambda r=run, b=block: r(b))
                if run is ours_block:
                    ours_s += spent
                else:
                    floor_s += spent
        floor.close()
        join_background_threads()
        runtime.close()
    return {
        "memproc_p50": percentile(answers, 50),
        "floor_p50": percentile(floors, 50),
        "memproc_total_s": ours_s,
        "floor_total_s": floor_s,
        "items": len(sample),
    }


def join_background_threads(timeout_s: float = 60.0) -> None:
    """Runtime.close does not wait for memproc's own threads (backfill, dense copy)."""
    for thread in threading.enumerate():
        if thread.name.startswith("memproc-") and thread is not threading.current_thread():
            thread.join(timeout_s)


def memproc_ingest(db: str, models_dir: str, sample: list[str]) -> None:
    runtime = Runtime(Config(db=db, models_dir=models_dir, reranker="none"))
    runtime.open_store()
    runtime.models.load_now()
    ctx = OpContext(runtime=runtime)
    for start in range(0, len(sample), 1000):
        items = [RememberItem(kind="note", content=t) for t in sample[start : start + 1000]]
        memory_ops.remember_batch(ctx, RememberBatchParams(scope=SCOPE, items=items))
    runtime.close()


def measure_spawn(db: str, models_dir: str, query: str, runs: int) -> dict[str, float]:
    """Spawn the service and send a hybrid search at once; also read its resident memory."""
    times, rss_first, rss_warm, peaks = [], [], [], []
    request = (
        '{"jsonrpc":"2.0","id":1,"method":"memory.search","params":'
        f'{{"scope":"{SCOPE}","query":"{query}","mode":"hybrid"}}}}\n'
    ).encode()
    for _ in range(runs):
        started = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "memproc", "serve", "--db", db, "--models-dir", models_dir],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(request)
        child.stdin.flush()
        line = child.stdout.readline()
        times.append(time.perf_counter() - started)
        if b'"result"' not in line:
            raise SystemExit(f"first search failed: {line[:300]!r}")
        rss_first.append(resident_mb(child.pid))
        rss_warm.append(rss_after_warm(child, request))
        peaks.append(resident_mb(child.pid, "VmHWM"))
        child.stdin.close()
        child.wait(timeout=30)
        child.stdout.close()
    return {
        "first_search_s": statistics.median(times),
        "rss_first_mb": statistics.median(rss_first),
        "rss_warm_mb": statistics.median(rss_warm),
        "peak_mb": statistics.median(peaks),
    }


def rss_after_warm(child: subprocess.Popen[bytes], request: bytes) -> float:
    """Resident memory once the in-memory vector copy is loaded (a few searches later)."""
    assert child.stdin is not None and child.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        child.stdin.write(request.replace(b'"mode":"hybrid"', b'"mode":"hybrid","explain":true'))
        child.stdin.flush()
        line = child.stdout.readline()
        if b'"dense_index":"memory"' in line:
            break
        time.sleep(0.2)
    return resident_mb(child.pid)


def resident_mb(pid: int, field: str = "VmRSS") -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return float("nan")


def choose_floors(
    models_dir: str, offline_dir: str, queries: list[str], sample: list[str]
) -> dict[str, ortfloor.OrtEmbedder]:
    """The fastest onnxruntime configuration for one text and for a batch of 64, each timed
    on this run's own texts."""
    chosen = ortfloor.fastest(
        os.path.join(models_dir, MODEL),
        offline_dir,
        {"one": queries[:1], "batch": sorted(sample, key=len)[:64]},
        rounds=20,
    )
    for workload, (name, _) in chosen.items():
        print(f"floor configuration for {workload}: {name}", file=sys.stderr)
    return {workload: embedder for workload, (_, embedder) in chosen.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--models-dir", default=str(REPO / ".cache" / "models"))
    parser.add_argument("--ingest-sample", type=int, default=2_000)
    parser.add_argument("--ingest-one", type=int, default=300, help="memories, one per call")
    parser.add_argument("--runs", type=int, default=3, help="runs of ingest and spawn")
    parser.add_argument(
        "--store",
        default=None,
        help="also measure the PostgreSQL store beside SQLite: a server URL, or `local` to "
        "start one (see store_compare.py); only these side-by-side figures are printed",
    )
    parser.add_argument("--writer-notes", type=int, default=200, help="per writer process")
    args = parser.parse_args()
    pull(MODEL, args.models_dir)
    rng = np.random.default_rng(7)
    embedder = Embedder(os.path.join(args.models_dir, MODEL), threads=2)
    words = vocabulary(5_000, np.random.default_rng(11))
    queries = texts(args.queries, words, rng, (4, 10))
    sample = texts(args.ingest_sample, words, rng, (15, 120))
    with tempfile.TemporaryDirectory() as tmp:
        if args.store is not None:
            import store_compare

            store_compare.run(args, tmp, embedder, queries, sample, fill_store, warm_until_loaded)
            return
        floors = choose_floors(args.models_dir, tmp, queries, sample)
        run_search(args, tmp, embedder, queries, floors["one"])
        run_ingest(args, sample, words, floors)


def run_search(
    args: argparse.Namespace,
    tmp: str,
    embedder: Embedder,
    queries: list[str],
    query_floor: ortfloor.OrtEmbedder,
) -> None:
    db = ""
    for size in [int(s) for s in args.sizes.split(",")]:
        db = os.path.join(tmp, f"speed-{size}.db")
        started = time.perf_counter()
        fill_store(db, size, embedder, np.random.default_rng(11))
        print(f"filled {size} memories in {time.perf_counter() - started:.1f} s", file=sys.stderr)
        figures = measure_search(db, args.models_dir, queries, query_floor)
        ratio = figures["memproc_p50"] / figures["floor_p50"]
        print(
            f"search @ {size:>7}: memproc p50 {figures['memproc_p50']:6.1f} ms "
            f"p95 {figures['memproc_p95']:6.1f} ms | floor p50 {figures['floor_p50']:6.1f} ms "
            f"p95 {figures['floor_p95']:6.1f} ms | p50 ratio {ratio:4.2f}x"
        )
    spawn = measure_spawn(db, args.models_dir, queries[0], args.runs)
    print(
        f"first search after spawn (largest store): median {spawn['first_search_s']:.2f} s; "
        f"RSS {spawn['rss_first_mb']:.0f} MB then {spawn['rss_warm_mb']:.0f} MB with the "
        f"vector copy warm; peak (VmHWM) {spawn['peak_mb']:.0f} MB"
    )


def run_ingest(
    args: argparse.Namespace,
    sample: list[str],
    words: list[str],
    floors: dict[str, ortfloor.OrtEmbedder],
) -> None:
    one = texts(args.ingest_one, words, np.random.default_rng(13), (15, 120))
    single = measure_ingest_one(args.models_dir, one, floors["one"])
    speed = single["floor_total_s"] / single["memproc_total_s"]
    print(
        f"ingest one at a time ({single['items']} memories): memproc "
        f"{single['items'] / single['memproc_total_s']:.1f}/s searchable (answers p50 "
        f"{single['memproc_p50']:.1f} ms) vs floor "
        f"{single['items'] / single['floor_total_s']:.1f}/s (p50 "
        f"{single['floor_p50']:.1f} ms) | memproc at {speed:4.2f}x of the floor's rate"
    )
    ingest = measure_ingest(args.models_dir, sample, args.runs, floors["batch"])
    ratio = ingest["memproc_s"] / ingest["raw_s"]
    print(
        f"ingest in bulk {ingest['items']} memories ({ingest['tokens']} tokens): memproc "
        f"{ingest['tokens'] / ingest['memproc_s']:.0f} tok/s vs best onnxruntime "
        f"{ingest['tokens'] / ingest['raw_s']:.0f} tok/s | time ratio {ratio:4.2f}x"
    )


if __name__ == "__main__":
    main()
