"""Shared pieces of the retrieval benchmarks: memproc on a temporary store, a cached embedder,
the naive baseline, the official metrics and table printing.

Why these live here: every benchmark must drive memproc through the very handlers the service
dispatches to (the method table's handlers), embed each distinct text once across runs (LongMemEval
sessions recur, and SciFact takes minutes to embed), and print memproc beside the same naive
pipeline so a figure always has its reference in the same run.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import math
import os
import shutil
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import apsw
import msgspec
import numpy as np

from memproc.config import Config
from memproc.models.embedder import Embedder
from memproc.models.pull import pull
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.server.methods import METHOD_TABLE
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.store.quoting import fts_match_any
from memproc.store.records import NewMemory
from memproc.store.vectors import PendingMemory
from memproc.wire.messages import SearchResult

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEFAULT_MODELS_DIR = os.path.join(REPO, ".cache", "models")
DEFAULT_CACHE_DIR = os.path.join(REPO, ".cache", "bench")
DEFAULT_MODEL = "minilm-l6-int8"
MEMPROC_MODES = ("lexical", "dense", "hybrid", "hybrid+boosts")
BASELINE_SYSTEMS = ("naive-bm25", "naive-dense", "naive-hybrid")
# Settings that make "hybrid" mean fusion alone, whatever the config defaults become.
NO_BOOSTS = {"recency_weight": 0.0, "importance_weight": 0.0, "access_weight": 0.0}
# hybrid+boosts when neither a flag nor the config sets a weight: recency lifts a memory from
# today by 20% over one a few half-lives old; importance is uniform in these data sets.
FALLBACK_BOOSTS = {"recency_weight": 0.2}
BATCH_CHUNK = 256  # items per remember_batch call (the protocol allows up to 1000)


def log(message: str) -> None:
    """Progress goes to stderr so stdout holds only the figures."""
    print(message, file=sys.stderr, flush=True)


def add_common_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--models-dir", default=DEFAULT_MODELS_DIR)
    parser.add_argument("--model", default=DEFAULT_MODEL, help="embedder name under models-dir")
    parser.add_argument("--cache", default=DEFAULT_CACHE_DIR, help="embedding cache directory")
    parser.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: auto)")
    parser.add_argument("--every", type=int, default=1, help="use every Nth query/conversation")
    parser.add_argument("--limit", type=int, default=None, help="at most N after --every")
    parser.add_argument(
        "--half",
        choices=("tune", "blind"),
        default=None,
        help="only the items of one half, split by sha256 of their ids (see half_of)",
    )
    parser.add_argument(
        "--modes",
        default=",".join(MEMPROC_MODES),
        help="memproc modes to run, comma-separated, from " + ",".join(MEMPROC_MODES),
    )
    parser.add_argument("--no-baseline", action="store_true", help="skip the naive pipeline")
    parser.add_argument(
        "--store",
        default=None,
        metavar="URL|local",
        help="also run every memproc mode on a PostgreSQL store, beside SQLite in the same run "
        "(labelled [postgres]): a server URL where databases named memproc_bench_* may be "
        "created and dropped, or `local` to start a private server (tests/pgkit.py)",
    )
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="memproc config setting for every mode, e.g. --set rrf_k=30 (repeatable)",
    )
    parser.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="LABEL:KEY=VALUE,...",
        help="a named set of memproc settings on top of --set, run in the same process as the "
        "plain modes: adds mode hybrid@LABEL unless --modes names MODE@LABEL itself "
        "(repeatable), e.g. --variant rm3:lexical_feedback_docs=5",
    )
    parser.add_argument(
        "--recency-weight", type=float, default=None, help="hybrid+boosts: config recency_weight"
    )
    parser.add_argument(
        "--recency-half-life-days", type=float, default=None, help="hybrid+boosts: half-life"
    )
    parser.add_argument(
        "--importance-weight", type=float, default=None, help="hybrid+boosts: importance_weight"
    )


def parse_modes(text: str, variants: Sequence[str] = ()) -> list[str]:
    """The memproc modes to run: plain modes, and `MODE@LABEL` for a mode under the settings
    of `--variant LABEL:...`; each variant no mode names runs as `hybrid@LABEL`."""
    modes = [m.strip() for m in text.split(",") if m.strip()]
    labels = list(parse_variants(variants))
    unknown = [m for m in modes if base_mode(m) not in MEMPROC_MODES]
    unknown += [m for m in modes if "@" in m and m.split("@", 1)[1] not in labels]
    if unknown:
        raise SystemExit(f"unknown mode(s): {', '.join(unknown)}")
    named = {m.split("@", 1)[1] for m in modes if "@" in m}
    return modes + [f"hybrid@{label}" for label in labels if label not in named]


def parse_variants(variants: Sequence[str]) -> dict[str, dict[str, Any]]:
    """`["rm3:a=1,b=2"]` -> {"rm3": {"a": 1, "b": 2}}, typed by memproc's own Config."""
    parsed: dict[str, dict[str, Any]] = {}
    for text in variants:
        label, _, pairs = text.partition(":")
        if not label or "@" in label or label in parsed:
            raise SystemExit(f"bad --variant {text!r}: a new label, then ':' and settings")
        parsed[label] = config_overrides([p for p in pairs.split(",") if p])
    return parsed


def base_mode(mode: str) -> str:
    """`hybrid@rm3` -> `hybrid`: the mode a variant's search runs in."""
    return mode.split("@", 1)[0]


# How a memproc system measured on the PostgreSQL store is named beside its SQLite figures.
POSTGRES_LABEL = " [postgres]"


def is_memproc(system: str) -> bool:
    """Whether a system name is one of memproc's modes (plain or a variant's, on either store)."""
    return base_mode(system.removesuffix(POSTGRES_LABEL)) in MEMPROC_MODES


def half_of(item_id: str) -> str:
    """A data set item's half, from its id alone: the first byte of sha256(id) even ->
    "tune", odd -> "blind". Settings are chosen on the tune half; the blind half is run once
    per change, to report, never to choose."""
    return "tune" if hashlib.sha256(item_id.encode("utf-8")).digest()[0] % 2 == 0 else "blind"


def in_half(items: Sequence[Any], half: str | None, key: Callable[[Any], str]) -> list[Any]:
    """The items of one half (all of them when `half` is None)."""
    return list(items) if half is None else [i for i in items if half_of(key(i)) == half]


def subset(items: Sequence[Any], every: int, limit: int | None) -> list[Any]:
    """Every Nth item from the first, then at most `limit`: a deterministic quick reading."""
    picked = list(items[:: max(1, every)])
    return picked if limit is None else picked[:limit]


def describe_subset(
    total: int, used: int, every: int, limit: int | None, half: str | None = None
) -> str:
    parts = [f"{used} of {total}"] + ([f"the {half} half"] if half else [])
    if every > 1:
        parts.append(f"every {every}th from the first")
    if limit is not None:
        parts.append(f"--limit {limit}")
    return ", ".join(parts)


# -- embeddings, cached on disk --------------------------------------------------------------


class EmbeddingCache:
    """sha256(model, max_length, exact text) -> float32 vector, in one SQLite file.

    The key includes the model and its truncation length so two models (or settings) never
    share a vector; the text is the one the model actually sees, prefix included.
    """

    def __init__(self, directory: str) -> None:
        os.makedirs(directory, exist_ok=True)
        self.path = os.path.join(directory, "embeddings.sqlite")
        self._db = sqlite3.connect(self.path, timeout=60, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS vectors (key BLOB PRIMARY KEY, vec BLOB NOT NULL) "
            "WITHOUT ROWID"
        )
        self._db.commit()

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        found: dict[bytes, np.ndarray] = {}
        for start in range(0, len(keys), 500):
            chunk = list(keys[start : start + 500])
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(f"SELECT key, vec FROM vectors WHERE key IN ({marks})", chunk)
            for key, blob in rows:
                found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: Iterable[tuple[bytes, np.ndarray]]) -> None:
        rows = [(key, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for key, vec in items]
        self._db.executemany("INSERT OR REPLACE INTO vectors (key, vec) VALUES (?, ?)", rows)
        self._db.commit()

    def close(self) -> None:
        self._db.close()


@dataclass
class EmbedStats:
    hits: int = 0
    misses: int = 0
    tokens: int = 0
    seconds: float = 0.0

    def line(self) -> str:
        rate = self.tokens / self.seconds if self.seconds else 0.0
        return (
            f"embeddings: {self.hits} cached, {self.misses} computed "
            f"({self.tokens} tokens in {self.seconds:.1f} s, {rate:.0f} tokens/s)"
        )


class CachingEmbedder:
    """Drop-in for `memproc.models.embedder.Embedder` that memoises `embed` on disk.

    Installed in memproc's embedder slot, so the service's own ingestion and query embedding
    hit the cache too; the baseline uses the same object, so a text memproc embedded is not
    embedded again for the baseline.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self.stats = EmbedStats()
        manifest = inner.manifest
        self._salt = f"{manifest.name}\x00{manifest.max_length}\x00".encode()

    def __getattr__(self, name: str) -> Any:
        # Anything memproc reads that is not overridden here comes from the real embedder.
        return getattr(self.inner, name)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dims(self) -> int:
        return self.inner.dims

    @property
    def manifest(self) -> Any:
        return self.inner.manifest

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.manifest.document_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.manifest.query_prefix + text for text in texts])

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return self.inner.token_counts(texts)

    def key(self, text: str) -> bytes:
        return hashlib.sha256(self._salt + text.encode("utf-8")).digest()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        output = np.zeros((len(texts), self.dims), dtype=np.float32)
        keys = [self.key(text) for text in texts]
        found = self.cache.get_many(list(dict.fromkeys(keys)))
        todo: dict[bytes, str] = {}
        for row, key in enumerate(keys):
            if key in found:
                output[row] = found[key]
                self.stats.hits += 1
            else:
                todo.setdefault(key, texts[row])
        if todo:
            fresh = self._compute(list(todo.values()))
            computed = dict(zip(todo, fresh, strict=True))
            self.cache.put_many(computed.items())
            for row, key in enumerate(keys):
                if key in computed:
                    output[row] = computed[key]
        return output

    def _compute(self, texts: list[str]) -> np.ndarray:
        started = time.perf_counter()
        vectors = self.inner.embed(texts)
        self.stats.seconds += time.perf_counter() - started
        self.stats.misses += len(texts)
        self.stats.tokens += sum(self.inner.token_counts(texts))
        return vectors


def load_embedder(args: argparse.Namespace) -> CachingEmbedder:
    """The model from --models-dir (pulled if absent), wrapped in the on-disk cache."""
    directory = os.path.join(args.models_dir, args.model)
    if not os.path.isdir(directory):
        log(f"pulling {args.model} into {args.models_dir}")
        directory = pull(args.model, args.models_dir, progress=log)
    threads = args.threads or min(4, os.cpu_count() or 1)
    return CachingEmbedder(Embedder(directory, threads=threads), EmbeddingCache(args.cache))


# -- memproc, through the service's own handlers ---------------------------------------------


def open_runtime(db_path: str, embedder: Any, models_dir: str, **settings: Any) -> Runtime:
    """A Runtime on `db_path` with `embedder` installed and no reranker; `settings` override
    Config fields (boost weights, for instance)."""
    name = embedder.name if embedder is not None else "none"
    config = Config(
        db=db_path,
        models_dir=models_dir,
        embedder=name,
        reranker="none",
        synchronous="normal",
        **settings,
    )
    runtime = Runtime(config)
    if embedder is not None:  # as the loader would, so one model load serves every store
        runtime.vectors.install_embedder(embedder)
    runtime.open_store()
    return runtime


REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@contextlib.contextmanager
def postgres_server(
    store: str | None, settings: dict[str, str] | None = None
) -> Iterator[str | None]:
    """The server `--store` names: None without one; for `local`, a private server started
    with the test kit for the run (extra postgresql.conf `settings`) and stopped after."""
    if store is None or store != "local":
        yield store
        return
    sys.path.insert(0, os.path.join(REPO_ROOT, "tests"))
    from pgkit import running_server

    with running_server(settings) as running:
        yield running.url


def fresh_database(server_url: str, name: str) -> str:
    """Drop and create database `name` on the server of `server_url`; its URL."""
    import psycopg
    from psycopg.conninfo import make_conninfo

    with psycopg.connect(make_conninfo(server_url, dbname="postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        admin.execute(f"CREATE DATABASE {name}")
    parts = urllib.parse.urlsplit(server_url)
    return urllib.parse.urlunsplit(
        (parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment)
    )


@contextlib.contextmanager
def store_targets(prefix: str, server_url: str | None) -> Iterator[list[tuple[str, str]]]:
    """Where memproc runs: an SQLite file, and with a server a fresh PostgreSQL database too;
    each with the suffix its figures are labelled by ("" and POSTGRES_LABEL)."""
    with temp_db(prefix) as path:
        targets = [("", path)]
        if server_url is not None:
            name = "memproc_bench_" + "".join(c for c in prefix if c.isalnum())
            targets.append((POSTGRES_LABEL, fresh_database(server_url, name)))
        yield targets


def store_labels(notes: ModeNotes, modes: Sequence[str]) -> dict[str, str]:
    """Each memproc system's label in the figures, on SQLite and (suffixed) on PostgreSQL."""
    return {system: notes.label(system) for m in modes for system in (m, m + POSTGRES_LABEL)}


@contextlib.contextmanager
def temp_db(prefix: str) -> Iterator[str]:
    """A database path in a fresh temporary directory, removed afterwards."""
    directory = tempfile.mkdtemp(prefix=prefix)
    try:
        yield os.path.join(directory, "memory.db")
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def call(runtime: Runtime, method: str, params: dict[str, Any]) -> Any:
    """Run `method` as the dispatcher does: its params type from the method table, converted
    from plain JSON-like values (so validation is the wire's), then its handler."""
    entry = METHOD_TABLE[method]
    return entry.handler(OpContext(runtime), msgspec.convert(params, entry.params))


def has_remember_batch() -> bool:
    return "memory.remember_batch" in METHOD_TABLE


def remember_all(
    runtime: Runtime, scope: str, items: Sequence[dict[str, Any]], chunk: int = BATCH_CHUNK
) -> list[str]:
    """Store `items` (RememberItem fields) and return their ids in order: remember_batch in
    chunks when memproc has it, else one remember per item. Identical content in the same
    scope and kind comes back with the first id (memproc's idempotency)."""
    if not has_remember_batch():
        return [call(runtime, "memory.remember", {**item, "scope": scope}).id for item in items]
    ids: list[str] = []
    for start in range(0, len(items), chunk):
        params = {"scope": scope, "items": list(items[start : start + chunk])}
        ids += [r.id for r in call(runtime, "memory.remember_batch", params).results]
    return ids


def memproc_search(runtime: Runtime, **params: Any) -> SearchResult:
    """`memory.search` through the handler the dispatcher calls."""
    return call(runtime, "memory.search", params)


def warm_queries(embedder: CachingEmbedder, queries: Sequence[str]) -> None:
    """Embed the queries into the cache before any search is timed, so every mode's latency
    is measured alike (without query embedding) instead of the first dense mode paying it."""
    embedder.embed_queries(list(queries))


def runtime_settings(mode: str, args: argparse.Namespace) -> dict[str, Any]:
    """Config overrides for a memproc mode: boosts off unless the mode is hybrid+boosts, where
    each weight comes from its flag, else the config default, else FALLBACK_BOOSTS (the
    config defaults are 0, which would make hybrid+boosts the same as hybrid)."""
    overrides = config_overrides(getattr(args, "set", []))
    if "@" in mode:
        variant = parse_variants(getattr(args, "variant", []))[mode.split("@", 1)[1]]
        return {**runtime_settings(base_mode(mode), args), **variant}
    if mode != "hybrid+boosts":
        return {**overrides, **NO_BOOSTS}
    flags = {
        "recency_weight": args.recency_weight,
        "recency_half_life_days": args.recency_half_life_days,
        "importance_weight": args.importance_weight,
    }
    defaults = Config()
    settings: dict[str, Any] = {}
    for name, flag in flags.items():
        configured = getattr(defaults, name)
        if flag is not None:
            settings[name] = flag
        elif name in FALLBACK_BOOSTS and not configured:
            settings[name] = FALLBACK_BOOSTS[name]
        else:
            settings[name] = configured
    return {**overrides, **settings}


def config_overrides(pairs: Sequence[str]) -> dict[str, Any]:
    """`["rrf_k=30"]` -> {"rrf_k": 30}, typed and range-checked by memproc's own Config."""
    raw = dict(pair.split("=", 1) for pair in pairs)
    typed = msgspec.structs.asdict(msgspec.convert(raw, Config, strict=False))
    return {key: typed[key] for key in raw}


def search_mode(mode: str) -> str:
    """The protocol's `mode` for a benchmark mode name."""
    mode = base_mode(mode)
    return "hybrid" if mode == "hybrid+boosts" else mode


class ModeRuntimes:
    """One Runtime per distinct config over the same database: the boosted mode needs its own
    weights, and a Runtime reads its Config as given."""

    def __init__(
        self,
        db_path: str,
        embedder: Any,
        args: argparse.Namespace,
        modes: list[str],
        base: dict[str, Any] | None = None,
    ):
        self._by_mode: dict[str, Runtime] = {}
        shared: dict[str, Runtime] = {}
        for mode in modes:
            settings = {**(base or {}), **runtime_settings(mode, args)}
            key = repr(sorted(settings.items()))
            if key not in shared:
                shared[key] = open_runtime(db_path, embedder, args.models_dir, **settings)
            self._by_mode[mode] = shared[key]
        self._all = list(shared.values())

    def writer(self) -> Runtime:
        return self._all[0]

    def __getitem__(self, mode: str) -> Runtime:
        return self._by_mode[mode]

    def close(self) -> None:
        # Runtime.close does not wait for memproc's background threads (the dense-copy load
        # reads on its own connection); closing under one raises ThreadingViolationError.
        join_background_threads()
        for runtime in self._all:
            runtime.close()


def join_background_threads(timeout_s: float = 120.0) -> None:
    """Wait for memproc's own worker threads (named memproc-*) started by this process."""
    for thread in threading.enumerate():
        if thread.name.startswith("memproc-") and thread is not threading.current_thread():
            thread.join(timeout_s)


@dataclass
class ModeNotes:
    """What memproc actually served per requested mode, so a run before dense search exists
    cannot pass a lexical figure off as a dense one."""

    served: dict[str, set[str]] = field(default_factory=dict)
    degraded: dict[str, set[str]] = field(default_factory=dict)

    def record(self, mode: str, result: SearchResult) -> None:
        self.served.setdefault(mode, set()).add(result.mode)
        if result.degraded:
            self.degraded.setdefault(mode, set()).add(str(result.degraded))

    def label(self, system: str) -> str:
        mode = system.removesuffix(POSTGRES_LABEL)
        store = system[len(mode) :]
        served = self.served.get(mode, set())
        wanted = search_mode(mode)
        if served and served != {wanted}:
            return f"memproc-{mode}{store} [served as {'/'.join(sorted(served))}]"
        return f"memproc-{mode}{store}"

    def warnings(self) -> list[str]:
        lines = []
        for mode, served in sorted(self.served.items()):
            if served != {search_mode(mode)}:
                lines.append(f"mode {mode}: memproc answered with mode {sorted(served)}")
        for mode, reasons in sorted(self.degraded.items()):
            lines.append(f"mode {mode}: degraded: {sorted(reasons)}")
        return lines


# -- the naive baseline, independent of memproc's search -------------------------------------


def rrf(rankings: Sequence[Sequence[int]], k: int = 60) -> list[int]:
    """Reciprocal rank fusion: score = sum over lists of 1 / (k + rank), rank from 1."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, doc in enumerate(ranking, start=1):
            scores[doc] = scores.get(doc, 0.0) + 1.0 / (k + rank)
    return sorted(scores, key=lambda doc: (-scores[doc], doc))


class NaiveIndex:
    """FTS5 bm25 over an OR of the query's words, MiniLM cosine by numpy brute force, and RRF
    k=60 over the two top-`depth` lists: nothing else. The reference every figure sits beside.
    """

    def __init__(self, texts: Sequence[str], embedder: CachingEmbedder, depth: int = 100):
        self.size = len(texts)
        self.depth = depth
        self._embedder = embedder
        self._db = apsw.Connection(":memory:")
        self._db.execute(
            "CREATE VIRTUAL TABLE docs USING fts5(content, "
            "tokenize = 'porter unicode61 remove_diacritics 2')"
        )
        with self._db:
            self._db.executemany(
                "INSERT INTO docs (rowid, content) VALUES (?, ?)", enumerate(texts)
            )
        self._vectors = embedder.embed_documents(list(texts))

    def bm25(self, query: str, depth: int | None = None) -> list[int]:
        match = fts_match_any(query)
        if match is None:
            return []
        rows = self._db.execute(
            "SELECT rowid FROM docs WHERE docs MATCH ? ORDER BY bm25(docs) LIMIT ?",
            (match, depth or self.depth),
        )
        return [row[0] for row in rows]

    def dense(self, query: str, depth: int | None = None) -> list[int]:
        vector = self._embedder.embed_queries([query])[0]
        scores = self._vectors @ vector
        top = min(depth or self.depth, self.size)
        order = np.argsort(-scores, kind="stable")[:top]
        return [int(i) for i in order]

    def hybrid(self, query: str, depth: int | None = None) -> list[int]:
        return rrf([self.bm25(query, depth), self.dense(query, depth)])

    def rank(self, system: str, query: str) -> list[int]:
        method: Callable[[str], list[int]] = {
            "naive-bm25": self.bm25,
            "naive-dense": self.dense,
            "naive-hybrid": self.hybrid,
        }[system]
        return method(query)


# -- metrics -----------------------------------------------------------------------------------


def _dcg(relevances: Sequence[float], k: int) -> float:
    """LongMemEval's DCG: r1 + sum_{i>=2} r_i / log2(i)."""
    rel = list(relevances)[:k]
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def lme_ndcg(ranking: Sequence[int], gold: set[str], corpus_ids: Sequence[str], k: int) -> float:
    """LongMemEval's ndcg: the ideal ranking is the corpus's relevances sorted, cut at k."""
    relevances = [1 if doc in gold else 0 for doc in corpus_ids]
    ideal = _dcg(sorted(relevances, reverse=True), k)
    if ideal == 0:
        return 0.0
    return _dcg([relevances[i] for i in ranking[:k]], k) / ideal


def lme_evaluate(
    ranking: Sequence[int], gold: Sequence[str], corpus_ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    """(recall_any@k, recall_all@k, ndcg_any@k) as eval_utils.evaluate_retrieval computes them.

    `ranking` holds corpus indices, best first; it may be shorter than the corpus (a search
    returns at most its limit), in which case what it omits counts as not retrieved.
    """
    recalled = {corpus_ids[i] for i in ranking[:k]}
    recall_any = float(any(doc in recalled for doc in gold))
    recall_all = float(all(doc in recalled for doc in gold))
    return recall_any, recall_all, lme_ndcg(ranking, set(gold), corpus_ids, k)


def strip_turn_id(doc_id: str) -> str:
    return "_".join(doc_id.split("_")[:-1])


def lme_evaluate_turn2session(
    ranking: Sequence[int], gold: Sequence[str], corpus_ids: Sequence[str], k: int
) -> tuple[float, float, float]:
    """Session-level scores from a turn ranking, as eval_utils.evaluate_retrieval_turn2session:
    turn ids map to their session, and k grows until the top k turns cover k distinct sessions.
    """
    session_gold = sorted({strip_turn_id(doc) for doc in gold})
    sessions = [strip_turn_id(doc) for doc in corpus_ids]
    effective_k = k
    while effective_k <= len(sessions) and len({sessions[i] for i in ranking[:effective_k]}) < k:
        effective_k += 1
    return lme_evaluate(ranking, session_gold, sessions, effective_k)


def beir_ndcg(ranked_ids: Sequence[str], qrels: dict[str, int], k: int = 10) -> float:
    """nDCG@k as BEIR computes it through pytrec_eval (trec_eval ndcg_cut): gain is the graded
    relevance itself, discount log2(rank + 1), ideal from the qrels' grades."""
    dcg = sum(qrels.get(doc, 0) / math.log2(rank + 1) for rank, doc in enumerate(ranked_ids[:k], 1))
    ideal_grades = sorted((g for g in qrels.values() if g > 0), reverse=True)[:k]
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_grades, 1))
    return dcg / ideal if ideal else 0.0


def evidence_recall(ranked: Sequence[str], evidence: set[str], k: int) -> tuple[float, float]:
    """(fraction of evidence ids in the top k, 1 if any is)."""
    top = set(ranked[:k])
    found = len(evidence & top)
    return found / len(evidence), float(found > 0)


def expand_hits(hit_ids: Sequence[str], by_memory: dict[str, list[int]]) -> list[int]:
    """Memory ids (best first) -> corpus indices. A memory holding several identical corpus
    texts (memproc deduplicates identical content) stands for all of them at its rank."""
    ranking: list[int] = []
    seen: set[int] = set()
    for memory_id in hit_ids:
        for index in by_memory.get(memory_id, []):
            if index not in seen:
                seen.add(index)
                ranking.append(index)
    return ranking


def index_memories(memory_ids: Sequence[str]) -> dict[str, list[int]]:
    by_memory: dict[str, list[int]] = {}
    for index, memory_id in enumerate(memory_ids):
        by_memory.setdefault(memory_id, []).append(index)
    return by_memory


# -- timing and tables -------------------------------------------------------------------------


class Timings:
    """Named lists of durations; medians are reported, as the brief asks."""

    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = {}

    @contextlib.contextmanager
    def measure(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.samples.setdefault(name, []).append(time.perf_counter() - started)

    def lines(self) -> list[str]:
        out = []
        for name, values in self.samples.items():
            median_ms = statistics.median(values) * 1000
            out.append(f"  {name:<34} median {median_ms:9.1f} ms  (n={len(values)})")
        return out


def mean(values: Iterable[float]) -> float:
    values = list(values)
    return sum(values) / len(values) if values else float("nan")


def print_table(title: str, columns: Sequence[str], rows: Sequence[tuple[str, Sequence[Any]]]):
    """A fixed-width table: a label column, then one column per metric (floats as 0.000)."""
    width = max([len(title), *(len(label) for label, _ in rows)]) + 2
    sizes = [max(8, len(c)) + 2 for c in columns]
    print(title.ljust(width) + "".join(f"{c:>{n}}" for c, n in zip(columns, sizes, strict=True)))
    for label, values in rows:
        cells = "".join(
            f"{v:>{n}.3f}" if isinstance(v, float) else f"{v!s:>{n}}"
            for v, n in zip(values, sizes, strict=True)
        )
        print(label.ljust(width) + cells)
    print()


def insert_synthetic_note(
    conn: apsw.Connection, scope: str, content: str, vector: np.ndarray | None, row: Any
) -> None:
    """One synthetic memory (a note) and, with an embedder row, its given vector, written
    the way a remember writes them: how the speed benchmarks fill a large store without
    embedding every text."""
    new = NewMemory(
        scope=scope,
        kind="note",
        content=content,
        tags=[],
        metadata={},
        source={},
        importance=0.5,
        client_token=None,
    )
    _, seq = memory_sql.insert(conn, new)
    if row is not None and vector is not None:
        pending = PendingMemory(seq, scope, "note", content, memory_sql.content_hash(content))
        vector_sql.put_vectors(conn, row, pending, [vector.astype(np.float32).tobytes()])
