"""The per-call path: what one `memory.remember` and one `memory.search` cost, and where it goes.

    python benchmarks/call_path.py [--sizes 1000,100000] [--remembers 100] [--searches 100]
                                   [--embedder minilm|stub|none] [--locomo PATH]
                                   [--profile] [--sql]

For each store size it prints, from one run:
- `memory.remember`, one memory per call through the real handler with the default
  synchronous=FULL: p50/p95 of the answer (given at the row's commit), the time per stage,
  SQLite statements per call, the time per memory until every vector is written (the worker
  embeds after the answer), and (with the real embedder) that beside the floor: the raw
  onnxruntime call on the same text (tokenize + `session.run`, best of three) plus one
  durable SQLite commit of one row;
- `memory.search` in each mode (lexical, dense, hybrid, interleaved per query): p50/p95, the
  time per stage and statements per call, and hybrid beside its floor, timed in the same loop:
  query embedding, numpy top-k over every vector, the FTS5 query alone;
- with `--profile`, cProfile's top functions by cumulative and by own time for each;
- with `--sql`, the statements one call runs, with their counts.

`--embedder stub` replaces inference by a hash-seeded random unit vector (no model, no
tokenizer; token counts are word counts): what remains is everything on the call path that is
not inference. `--embedder none` runs without an embedder (lexical search, no vectors).

Stores are built once and cached under `--cache` (a copy is used per run, so remembers never
change the cached file): synthetic text (a 5,000-word vocabulary, Zipf, 15-40 words) written
through the store's own write functions (`memories.insert`, `vectors.put_vectors`) in
transactions of 5,000, each memory with one random unit vector under the chosen embedder.
Search latency does not depend on how the vectors were made, and embedding 100,000 texts for
real would take most of an hour. `--locomo` adds a real conversation store: one LoCoMo
conversation (conv-47, 689 turns; keyed as `locomo.py` keys them) stored through
`memory.remember_batch`, searched with its own questions.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import hashlib
import io
import os
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

import apsw
import numpy as np

import common
from memproc.config import Config
from memproc.models.manifest import ModelManifest
from memproc.ops import search as search_ops
from memproc.ops.memories import creation, embedding
from memproc.retrieval import dense_cache, pipeline
from memproc.retrieval.indexing import VectorIndex, embedder_fingerprint
from memproc.retrieval.query import lexical_match
from memproc.runtime import Runtime
from memproc.store import Store
from memproc.store import memories as memory_sql
from memproc.store.connection import sqlite_vec_path
from memproc.store.migrations import LATEST_VERSION

SCOPE = "callpath"
MODES = ("lexical", "dense", "hybrid")
FILL_BATCH = 5_000
LOCOMO_CONVERSATION = "conv-47"


# -- an embedder without inference ---------------------------------------------------------------


class StubEmbedder:
    """MiniLM's interface with no model behind it: each text's vector is a unit vector drawn
    from a generator seeded by the text's hash, and a text's token count is its word count."""

    dims = 384

    def __init__(self) -> None:
        self.manifest = ModelManifest(
            name="stub-embedder",
            kind="embedder",
            dims=self.dims,
            max_length=256,
            files={"model.onnx": "0" * 64, "tokenizer.json": "0" * 64},
            licence="none",
            source="benchmarks/call_path.py",
        )
        self.name = self.manifest.name

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return np.stack([unit_vector(text, self.dims) for text in texts])

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(text.split()) + 2 for text in texts]


def unit_vector(text: str, dims: int) -> np.ndarray:
    seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
    vector = np.random.default_rng(seed).standard_normal(dims).astype(np.float32)
    return vector / np.linalg.norm(vector)


def load_embedder(args: argparse.Namespace) -> Any:
    if args.embedder == "none":
        return None
    if args.embedder == "stub":
        return StubEmbedder()
    from memproc.models.embedder import Embedder

    directory = os.path.join(args.models_dir, common.DEFAULT_MODEL)
    if not os.path.isdir(directory):
        from memproc.models.pull import pull

        directory = pull(common.DEFAULT_MODEL, args.models_dir, progress=common.log)
    return Embedder(directory, threads=args.threads or min(4, os.cpu_count() or 1))


# -- synthetic text and stores ---------------------------------------------------------------------


class Corpus:
    """Zipf-distributed words from a fixed vocabulary, as search_speed.py makes them."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        syllables = [c + v for c in "bcdfghklmnprstvz" for v in "aeiou"]
        words: set[str] = set()
        while len(words) < 5_000:
            words.add("".join(self.rng.choice(syllables, size=int(self.rng.integers(1, 4)))))
        self.words = sorted(words)
        weights = 1.0 / np.arange(1, len(self.words) + 1)
        self.weights = weights / weights.sum()

    def texts(self, count: int, low: int = 15, high: int = 40) -> list[str]:
        lengths = self.rng.integers(low, high, size=count)
        return [" ".join(self.rng.choice(self.words, size=int(n), p=self.weights)) for n in lengths]


def open_runtime(db: str, embedder: Any, models_dir: str, **settings: Any) -> Runtime:
    """A Runtime with the embedder installed in its slot and the default synchronous=FULL
    (the durability a client gets), unlike the retrieval benchmarks' runtimes."""
    config = Config(
        db=db,
        models_dir=models_dir,
        embedder="none" if embedder is None else embedder.name,
        reranker="none",
        **settings,
    )
    runtime = Runtime(config)
    if embedder is not None:
        runtime.vectors.install_embedder(embedder)
    runtime.open_store()
    return runtime


def cached_store(args: argparse.Namespace, size: int, embedder: Any) -> str:
    """The path of a built store of `size` memories (built now if not cached)."""
    fingerprint = "none" if embedder is None else embedder_fingerprint(embedder)[:12]
    spread = f"-s{args.other_scopes}" if args.other_scopes else ""
    name = f"call_path-v{LATEST_VERSION}-{size}{spread}-{fingerprint}.db"
    path = os.path.join(args.cache, name)
    if not os.path.exists(path):
        common.log(f"building {name} ({size} memories)")
        started = time.perf_counter()
        fill_store(path + ".tmp", size, embedder, args.other_scopes)
        for suffix in ("-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(path + ".tmp" + suffix)
        os.replace(path + ".tmp", path)
        common.log(f"  built in {time.perf_counter() - started:.0f} s")
    return path


def fill_store(path: str, size: int, embedder: Any, other_scopes: int = 0) -> None:
    """Synthetic memories, one random unit vector each, through the store's write functions;
    with `other_scopes`, one memory in 1 + other_scopes is in the searched scope and the
    rest take turns in the others."""
    corpus = Corpus(seed=size)
    scopes = [SCOPE] + [f"other-{i}" for i in range(other_scopes)]
    store = Store(path)
    row = None if embedder is None else VectorIndex(store, embedder).row()
    made = 0
    while made < size:
        batch = corpus.texts(min(FILL_BATCH, size - made))
        vectors = corpus.rng.standard_normal((len(batch), 384)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        with store.writing() as conn:
            for offset, (content, vector) in enumerate(zip(batch, vectors, strict=True)):
                scope = scopes[(made + offset) % len(scopes)]
                common.insert_synthetic_note(conn, scope, content, vector, row)
        made += len(batch)
    store.checkpoint()
    store.close()


@contextlib.contextmanager
def store_copy(path: str) -> Iterator[str]:
    directory = tempfile.mkdtemp(prefix="call-path-")
    try:
        copy = os.path.join(directory, "memory.db")
        shutil.copyfile(path, copy)
        yield copy
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def wait_for_dense_copy(runtime: Runtime, deadline_s: float = 300.0) -> None:
    """Searches use the in-memory copy of the vectors once it is loaded: wait for it."""
    index = runtime.vectors.vector_index(0.0, required=False)
    if index is None:
        return
    cache = runtime.vectors.dense_cache(index.row())
    stop = time.monotonic() + deadline_s
    while not cache.loaded and time.monotonic() < stop:
        time.sleep(0.05)


# -- what each call costs: stages and statements -------------------------------------------------

Times = tuple[float, float]  # wall seconds, CPU seconds (the whole process's)


def now() -> Times:
    return time.perf_counter(), time.process_time()


def since(started: Times) -> Times:
    """Wall and CPU time since `started`. CPU time is what the call's own work cost: on a
    machine shared with other jobs, wall time also counts the waits for a core."""
    wall, cpu = now()
    return wall - started[0], cpu - started[1]


def medians(times: Sequence[Times]) -> Times:
    """Median wall and median CPU time, in ms."""
    return (
        statistics.median(wall for wall, _ in times) * 1000,
        statistics.median(cpu for _, cpu in times) * 1000,
    )


class Stages:
    """Wall time per named stage of a call, by wrapping the functions the call goes through.

    Only used on the timing pass; a wrapper costs about a microsecond."""

    def __init__(self) -> None:
        self.samples: dict[str, list[Times]] = {}
        self.order: list[str] = []  # as wrapped: callers before what they call
        self._current: dict[str, Times] = {}
        self._undo: list[tuple[Any, str, Any]] = []

    def wrap(self, owner: Any, name: str, label: str) -> None:
        original = getattr(owner, name)
        self.order.append(label)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = now()
            try:
                return original(*args, **kwargs)
            finally:
                self.add(label, since(started))

        self._undo.append((owner, name, vars(owner).get(name)))
        setattr(owner, name, timed)

    def wrap_context(self, owner: Any, name: str, label: str) -> None:
        """A context-manager method: the time from entering to having left it."""
        original = getattr(owner, name)
        self.order.append(label)

        @contextlib.contextmanager
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            started = now()
            try:
                with original(*args, **kwargs) as value:
                    yield value
            finally:
                self.add(label, since(started))

        self._undo.append((owner, name, vars(owner).get(name)))
        setattr(owner, name, timed)

    def add(self, label: str, spent: Times) -> None:
        wall, cpu = self._current.get(label, (0.0, 0.0))
        self._current[label] = (wall + spent[0], cpu + spent[1])

    def take(self) -> dict[str, Times]:
        """The stages of the call that just ended (and start the next)."""
        current, self._current = self._current, {}
        return current

    def keep(self, call: dict[str, Times], order: Sequence[str] = ()) -> None:
        self.order = self.order or list(order)
        for label, seconds in call.items():
            self.samples.setdefault(label, []).append(seconds)

    def _position(self, label: str) -> int:
        return self.order.index(label) if label in self.order else len(self.order)

    def restore(self) -> None:
        for owner, name, original in reversed(self._undo):
            if original is None:  # an instance's method, found on its class
                delattr(owner, name)
            else:
                setattr(owner, name, original)
        self._undo = []

    def lines(self, calls: int) -> list[str]:
        """Per stage: medians (wall, CPU) over the calls that went through it, and how many
        did."""
        out = []
        for label in sorted(self.samples, key=self._position):
            values = self.samples[label]
            wall, cpu = medians(values)
            out.append(f"    {label:<40} {wall:8.3f} / {cpu:8.3f}   ({len(values)}/{calls})")
        return out


def remember_stages(runtime: Runtime) -> Stages:
    stages = Stages()
    stages.wrap_context(Store, "reading", "read transaction (idempotency check)")
    stages.wrap(embedding, "embed", "embed (chunking + inference)")
    stages.wrap_context(Store, "writing", "write transaction (inserts + commit)")
    stages.wrap(creation, "insert", "  inserts (row, refs, vectors)")
    stages.wrap(embedding, "store_vectors", "    of which vectors")
    return stages


def search_stages(runtime: Runtime, embedder: Any) -> Stages:
    stages = Stages()
    stages.wrap(search_ops, "_dense_channel", "model lookup")
    if embedder is not None:
        stages.wrap(embedder, "embed_queries", "query embedding")
    stages.wrap(search_ops, "_plan", "plan (time frame, lexical query)")
    stages.wrap(pipeline, "gather", "gather (read transaction body)")
    stages.wrap(memory_sql, "search_lexical", "  lexical (FTS5 query + rows)")
    stages.wrap(pipeline, "_gather_dense", "  dense")
    stages.wrap(dense_cache.DenseCache, "refresh", "    copy refresh (journal)")
    stages.wrap(dense_cache.DenseCache, "nearest", "    nearest (numpy)")
    stages.wrap(memory_sql, "get_many_by_seq", "    rows of dense-only hits")
    stages.wrap(search_ops, "annotate", "annotate (refs, challenges)")
    stages.wrap(pipeline, "fuse_and_boost", "fuse and boost")
    stages.wrap(search_ops, "_hit", "result views")
    return stages


class Statements:
    """SQLite statements per call, from the store's tracer."""

    def __init__(self, store: Store) -> None:
        self.current: dict[str, int] = {}
        self.per_call: list[int] = []
        store.add_tracer(self._trace)
        self.enabled = False

    def _trace(self, cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        if self.enabled:
            key = " ".join(sql.split())
            self.current[key] = self.current.get(key, 0) + 1
        return True

    @contextlib.contextmanager
    def call(self) -> Iterator[None]:
        self.current = {}
        self.enabled = True
        try:
            yield
        finally:
            self.enabled = False
            self.per_call.append(sum(self.current.values()))

    def listing(self) -> list[str]:
        """The last call's statements, most frequent first."""
        ordered = sorted(self.current.items(), key=lambda item: -item[1])
        return [f"      {count:4d} x {sql[:150]}" for sql, count in ordered]


def summary(what: str, times: Sequence[Times]) -> str:
    walls = [wall for wall, _ in times]
    wall50, cpu50 = medians(times)
    wall95 = float(np.percentile(walls, 95)) * 1000
    return (
        f"  {what} (n={len(times)}): p50 {wall50:.2f} ms wall, {cpu50:.2f} ms CPU; "
        f"p95 {wall95:.2f} ms wall\n    {'stage':<40} {'wall':>8} / {'CPU':>8} ms (calls)"
    )


def profile_top(profile: cProfile.Profile, top: int) -> list[str]:
    out = []
    for key, title in (("cumulative", "cumulative"), ("tottime", "own time")):
        buffer = io.StringIO()
        stats = pstats.Stats(profile, stream=buffer)
        stats.strip_dirs().sort_stats(key).print_stats(top)
        body = buffer.getvalue().splitlines()
        start = next(i for i, line in enumerate(body) if line.strip().startswith("ncalls"))
        out.append(f"    -- top {top} by {title}")
        out += ["    " + line for line in body[start : start + top + 1] if line.strip()]
    return out


# -- remember ------------------------------------------------------------------------------------


def measure_remember(
    runtime: Runtime, embedder: Any, texts: list[str], args: argparse.Namespace
) -> list[str]:
    statements = Statements(runtime.store())
    stages = remember_stages(runtime)
    times = []

    def remember(text: str) -> None:
        common.call(runtime, "memory.remember", {"scope": SCOPE, "kind": "note", "content": text})

    remember("warm-up " + texts[0])
    runtime.vectors.caught_up(600.0)
    try:
        block_started = time.perf_counter()
        for text in texts[: args.remembers]:
            with statements.call():
                started = now()
                remember(text)
                times.append(since(started))
            stages.keep(stages.take())
        runtime.vectors.caught_up(600.0)  # a remember answers before its vectors are written
        block_s = time.perf_counter() - block_started
    finally:
        stages.restore()
    searchable_ms = block_s * 1000 / max(1, len(times))
    lines = [summary("memory.remember, one at a time (answered at the row's commit)", times)]
    lines += stages.lines(len(times))
    lines.append(
        f"    until every vector is written: {searchable_ms:.2f} ms per memory "
        f"({1000 / searchable_ms:.1f}/s searchable)"
    )
    lines.append(f"    SQLite statements per call: {statistics.median(statements.per_call):.0f}")
    if args.sql:
        lines += ["    statements of the last call:", *statements.listing()]
    if args.embedder == "minilm":
        lines += remember_floor(embedder, texts[: args.remembers], searchable_ms, args)
    if args.profile:
        profile = cProfile.Profile()
        profile.enable()
        for text in texts[args.remembers : 2 * args.remembers]:
            remember(text)
        profile.disable()
        lines += profile_top(profile, args.top)
    return lines


def remember_floor(
    embedder: Any, texts: list[str], ours_ms: float, args: argparse.Namespace
) -> list[str]:
    """The best onnxruntime call on each text (tokenize + session.run, best of three) plus one
    durable commit (one row, WAL, synchronous=FULL, same file system), per memory."""
    inference = []
    for text in texts:
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            embedder.session.run(None, embedder.feeds([text]))
            best = min(best, time.perf_counter() - started)
        inference.append(best)
    commits = durable_commits(len(texts), args.cache)
    floor = statistics.median(inference) * 1000 + statistics.median(commits) * 1000
    return [
        f"    floor: onnxruntime {statistics.median(inference) * 1000:.2f} ms + commit "
        f"{statistics.median(commits) * 1000:.2f} ms = {floor:.2f} ms; "
        f"floor / memproc (per memory searchable) = {floor / ours_ms:.2f}x (target >= 0.8x)"
    ]


def durable_commits(count: int, directory: str) -> list[float]:
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        conn = apsw.Connection(os.path.join(tmp, "floor.db"))
        conn.pragma("journal_mode", "wal")
        conn.pragma("synchronous", "full")
        conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
        times = []
        for i in range(count):
            started = time.perf_counter()
            with conn:
                conn.execute("INSERT INTO t (body) VALUES (?)", (f"row {i}",))
            times.append(time.perf_counter() - started)
        conn.close()
    return times


# -- search --------------------------------------------------------------------------------------


def measure_search(
    runtime: Runtime, embedder: Any, queries: list[str], args: argparse.Namespace, **extra: Any
) -> list[str]:
    modes = [m for m in args.modes.split(",") if embedder is not None or m == "lexical"]
    statements = Statements(runtime.store())
    stages = {mode: Stages() for mode in modes}
    times: dict[str, list[Times]] = {mode: [] for mode in modes}
    counts: dict[str, list[int]] = {mode: [] for mode in modes}
    listings: dict[str, list[str]] = {}

    def search(mode: str, query: str) -> Any:
        params = {"scope": SCOPE, "query": query, "mode": mode, "limit": 10, **extra}
        return common.call(runtime, "memory.search", params)

    for mode in modes:
        search(mode, queries[0])
    floor = None
    if "hybrid" in modes and embedder is not None:
        floor = SearchFloor(runtime.store().path, embedder, runtime.config.candidate_pool)
        floor.search(queries[0])
    floor_times: list[Times] = []
    wrapped = search_stages(runtime, embedder)
    try:
        for query in queries[: args.searches]:
            for mode in modes:  # interleaved, so that noise hits every mode alike
                with statements.call():
                    started = now()
                    search(mode, query)
                    times[mode].append(since(started))
                stages[mode].keep(wrapped.take(), wrapped.order)
                counts[mode].append(statements.per_call[-1])
                listings[mode] = statements.listing()
            if floor is not None:
                started = now()
                floor.search(query)
                floor_times.append(since(started))
                wrapped.take()  # the floor's query embedding is no stage of a search
    finally:
        wrapped.restore()
        if floor is not None:
            floor.close()
    lines = []
    for mode in modes:
        lines.append(summary(f"memory.search {mode}", times[mode]))
        lines += stages[mode].lines(len(times[mode]))
        lines.append(f"    SQLite statements per call: {statistics.median(counts[mode]):.0f}")
        if args.sql:
            lines += ["    statements of the last call:", *listings[mode]]
    if floor_times:
        wall, cpu = medians(floor_times)
        ours = medians(times["hybrid"])
        lines.append(
            f"  hybrid floor (query embedding + numpy top-k + FTS5 query alone): p50 "
            f"{wall:.2f} ms wall, {cpu:.2f} ms CPU; hybrid / floor = {ours[0] / wall:.2f}x "
            f"wall, {ours[1] / cpu:.2f}x CPU"
        )
    if args.profile:
        for mode in modes:
            profile = cProfile.Profile()
            profile.enable()
            for query in queries[: args.searches]:
                search(mode, query)
            profile.disable()
            lines += [f"  profile of memory.search {mode}:", *profile_top(profile, args.top)]
    return lines


class SearchFloor:
    """The least a hybrid search must do, on the same file and the same embedder: embed the
    query, score every vector and take the top k (numpy on one thread: see
    dense_cache.dot_rows), run the FTS5 query alone (bm25, no filters)."""

    def __init__(self, db: str, embedder: Any, pool: int) -> None:
        self.embedder, self.pool = embedder, pool
        self.conn = apsw.Connection(db, flags=apsw.SQLITE_OPEN_READONLY)
        self.conn.enable_load_extension(True)
        self.conn.load_extension(sqlite_vec_path())
        table = self.conn.execute("SELECT id FROM embedders").get
        rows = self.conn.execute(f"SELECT embedding FROM vec_embedder_{table}").fetchall()
        matrix = np.frombuffer(b"".join(row[0] for row in rows), dtype=np.float32)
        self.matrix = matrix.reshape(len(rows), embedder.dims)

    def search(self, query: str) -> None:
        vector = self.embedder.embed_queries([query])[0]
        scores = np.einsum("ij,j->i", self.matrix, vector, optimize=False)
        count = min(self.pool, len(scores))
        top = np.argpartition(-scores, count - 1)[:count]
        top[np.argsort(-scores[top])]
        self.conn.execute(
            "SELECT rowid, bm25(memories_fts) AS s FROM memories_fts WHERE memories_fts MATCH ? "
            "ORDER BY s LIMIT ?",
            (lexical_match(query) or '""', self.pool),
        ).fetchall()

    def close(self) -> None:
        self.conn.close()


# -- stores --------------------------------------------------------------------------------------


def run_synthetic(args: argparse.Namespace, embedder: Any, size: int) -> None:
    path = cached_store(args, size, embedder)
    corpus = Corpus(seed=size + 1)
    texts = [f"{text} n{i}" for i, text in enumerate(corpus.texts(2 * args.remembers + 1))]
    queries = corpus.texts(args.searches, low=3, high=9)
    with store_copy(path) as db:
        runtime = open_runtime(db, embedder, args.models_dir)
        try:
            wait_for_dense_copy(runtime)
            share = f", 1 in {args.other_scopes + 1} in the searched scope" * bool(
                args.other_scopes
            )
            print(f"== {size:,} memories (synthetic{share}), embedder {args.embedder}")
            if args.searches:
                for line in measure_search(runtime, embedder, queries, args):
                    print(line)
            if args.remembers:
                for line in measure_remember(runtime, embedder, texts, args):
                    print(line)
            print(flush=True)
        finally:
            common.join_background_threads()
            runtime.close()


def run_locomo(args: argparse.Namespace, embedder: Any) -> None:
    """One real conversation, stored through remember_batch, searched with its questions
    (category 1-4), `now` its last session date, as locomo.py does."""
    import json

    import locomo

    with open(args.locomo, encoding="utf-8") as handle:
        samples = {sample["sample_id"]: sample for sample in json.load(handle)}
    sample = samples[LOCOMO_CONVERSATION]
    conv = locomo.load_conversation(sample)
    keying = argparse.Namespace(context_turns=2, context_after=1, context_in="field")
    items = [
        {
            "kind": "episode",
            **locomo.keyed(conv, i, keying),
            "metadata": conv.metadata[i],
            "occurred_at": conv.dates[i],
        }
        for i in range(len(conv.texts))
    ]
    queries = [qa["question"] for qa in sample["qa"] if qa.get("category") in (1, 2, 3, 4)]
    builder = embedder
    if args.embedder == "minilm":  # build from the embedding cache; search with the model
        builder = common.CachingEmbedder(embedder, common.EmbeddingCache(args.cache))
    with common.temp_db("call-path-locomo-") as db:
        runtime = open_runtime(db, builder, args.models_dir)
        common.remember_all(runtime, SCOPE, items)
        common.join_background_threads()
        runtime.close()
        runtime = open_runtime(db, embedder, args.models_dir)
        try:
            wait_for_dense_copy(runtime)
            print(
                f"== LoCoMo {LOCOMO_CONVERSATION}: {len(items)} turns, {len(queries)} "
                f"questions, embedder {args.embedder} (end to end: query embedding included)"
            )
            now = {"now": conv.last_date}
            for line in measure_search(runtime, embedder, queries, args, **now):
                print(line)
            print(flush=True)
        finally:
            common.join_background_threads()
            runtime.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,100000", help="synthetic store sizes ('' none)")
    parser.add_argument("--remembers", type=int, default=100, help="timed remembers per size")
    parser.add_argument("--searches", type=int, default=100, help="timed searches per mode")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--embedder", choices=("minilm", "stub", "none"), default="minilm")
    parser.add_argument("--locomo", default=None, help="locomo_dev.json: add a conversation store")
    parser.add_argument(
        "--other-scopes",
        type=int,
        default=0,
        help="spread the synthetic memories over N more scopes (search and remember stay in one)",
    )
    parser.add_argument("--profile", action="store_true", help="print cProfile's top functions")
    parser.add_argument("--top", type=int, default=15, help="functions per profile listing")
    parser.add_argument("--sql", action="store_true", help="list the statements of one call")
    parser.add_argument("--models-dir", default=common.DEFAULT_MODELS_DIR)
    parser.add_argument("--cache", default=common.DEFAULT_CACHE_DIR)
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: auto)")
    args = parser.parse_args()
    os.makedirs(args.cache, exist_ok=True)
    embedder = load_embedder(args)
    print(f"call_path.py {' '.join(sys.argv[1:])}: {time.strftime('%Y-%m-%d %H:%M')}")
    print(f"memproc schema v{LATEST_VERSION}; medians of per-call figures; times in ms\n")
    for size in [int(s) for s in args.sizes.split(",") if s.strip()]:
        run_synthetic(args, embedder, size)
    if args.locomo:
        run_locomo(args, embedder)


if __name__ == "__main__":
    main()
