"""Helpers for the search tests: Runtimes with MiniLM installed, handler shortcuts, a corpus.

Each Runtime is real (SQLite files in tmp_path, MiniLM from the session's `minilm_dir`) and its
models are loaded synchronously, so a test never races the loader unless it means to.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.dense_cache import DenseCache
from memproc.runtime import Runtime
from memproc.store import maintenance
from memproc.store.vectors import EmbedderRow
from memproc.wire.messages import (
    RememberBatchParams,
    RememberItem,
    RememberParams,
    SearchParams,
    SearchResult,
)

EMBEDDER = "minilm-l6-int8"
BACKGROUND_THREADS = ("memproc-dense", "memproc-backfill", "memproc-embed", "memproc-models")
DEADLINE_S = 60.0  # a ceiling for background work, never a pause

CORPUS = {
    "deploy": "The deploy pipeline pushes container images to the registry after tests pass.",
    "tabs": "Alice prefers tabs over spaces in Python files.",
    "postgres": "Postgres connection pool exhausted during the nightly batch job.",
    "cat": "The cat sleeps on the sofa.",
    "revenue": "Quarterly revenue grew by eight percent.",
    "ruff": "Use ruff for linting and formatting.",
}
# Shares no word with any memory in CORPUS, but means the same as CORPUS["cat"].
PARAPHRASE = "kitten napping couch"

OpenRuntime = Callable[..., Runtime]


def opener(make_runtime: Callable[..., Runtime], models_dir: Path) -> OpenRuntime:
    """open_runtime(db=None, load=True, **config) -> a Runtime over `models_dir` with MiniLM as
    the embedder and no reranker unless asked, its models loaded unless load=False."""

    def open_runtime(db: str | None = None, *, load: bool = True, **settings: Any) -> Runtime:
        settings.setdefault("models_dir", str(models_dir))
        settings.setdefault("embedder", EMBEDDER)
        settings.setdefault("reranker", "none")
        runtime = make_runtime(db, **settings)
        if load:
            runtime.models.load_now()
        return runtime

    return open_runtime


def settle() -> None:
    """Wait for every model-loader, backfill and dense-copy thread to finish (a loader starts
    the backfill, so look again until none is left): background work is then done, and no
    runtime is closed under a thread still reading it."""
    deadline = time.monotonic() + DEADLINE_S
    while busy := [t for t in threading.enumerate() if t.name in BACKGROUND_THREADS]:
        for thread in busy:
            thread.join(max(0.0, deadline - time.monotonic()))
            assert not thread.is_alive(), f"{thread.name} still running after {DEADLINE_S}s"


def ctx_of(runtime: Runtime) -> OpContext:
    return OpContext(runtime=runtime)


def remember(runtime: Runtime, content: str, **fields: Any) -> str:
    fields.setdefault("scope", "proj")
    fields.setdefault("kind", "note")
    return memory_ops.remember(ctx_of(runtime), RememberParams(content=content, **fields)).id


def remember_all(runtime: Runtime, contents: dict[str, str], **fields: Any) -> dict[str, str]:
    """Remember each text as a note, in one batch; name -> id."""
    fields.setdefault("scope", "proj")
    items = [RememberItem(kind="note", content=text) for text in contents.values()]
    result = memory_ops.remember_batch(ctx_of(runtime), RememberBatchParams(items=items, **fields))
    return {name: r.id for name, r in zip(contents, result.results, strict=True)}


def search(runtime: Runtime, query: str, **fields: Any) -> SearchResult:
    if "scopes" not in fields:
        fields.setdefault("scope", "proj")
    return search_ops.search(ctx_of(runtime), SearchParams(query=query, **fields))


def ids(result: SearchResult) -> list[str]:
    return [hit.id for hit in result.results]


def seq_of(runtime: Runtime, memory_id: str) -> int:
    with runtime.store().reading() as conn:
        return int(conn.execute("SELECT seq FROM memories WHERE id = ?", (memory_id,)).get)


def count(runtime: Runtime, sql: str, *bindings: Any) -> int:
    with runtime.store().reading() as conn:
        return int(conn.execute(sql, bindings).get)


def embedder_row(runtime: Runtime) -> EmbedderRow:
    index = runtime.vectors.vector_index(0.0, required=True)
    assert index is not None
    return index.row()


def loaded_dense_copy(runtime: Runtime) -> DenseCache:
    """The runtime's in-memory dense copy, loaded (by its own thread or, if none ran, here)."""
    row = embedder_row(runtime)
    cache = runtime.vectors.dense_cache(row)
    settle()
    runtime.vectors.warm_dense_cache(row)
    assert cache.loaded
    return cache


def verify(runtime: Runtime) -> maintenance.IndexReport:
    """The index report once the runtime's deferred vectors are written: a remember's vectors
    follow its answer, and verify would count them missing (or meet their write)."""
    assert runtime.vectors.caught_up(DEADLINE_S)
    with runtime.store().reading() as conn:
        return maintenance.verify(conn)


def cosine(runtime: Runtime, query: str, document: str) -> float:
    """What MiniLM itself says about a query and a document, outside the search path."""
    model = runtime.models.get("embedder", 0.0)
    q = model.embed_queries([query])[0]
    d = model.embed_documents([document])[0]
    return float(np.dot(q, d))
