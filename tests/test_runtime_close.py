"""Closing a Runtime while background work reads the store: it waits for that work first."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from memproc.config import Config
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.dense_cache import DenseCache
from memproc.runtime import Runtime
from memproc.wire.messages import RememberBatchParams, RememberItem, SearchParams


def test_close_waits_for_the_dense_copy_load(
    tmp_path: Path, minilm_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = Config(db=str(tmp_path / "m.db"), models_dir=str(minilm_dir.parent), reranker="none")
    runtime = Runtime(config)
    runtime.open_store()
    runtime.models.load_now()
    ctx = OpContext(runtime=runtime)
    items = [RememberItem(kind="note", content=f"caching layer note {i}") for i in range(20)]
    memory_ops.remember_batch(ctx, RememberBatchParams(scope="s", items=items))

    started, release, events = threading.Event(), threading.Event(), []
    real_load = DenseCache.load

    def held_load(self: DenseCache, conn: Any, *args: Any, **kwargs: Any) -> bool:
        started.set()
        release.wait(10)
        loaded = real_load(self, conn, *args, **kwargs)
        events.append("loaded")
        return loaded

    monkeypatch.setattr(DenseCache, "load", held_load)
    search_ops.search(ctx, SearchParams(scope="s", query="cache", mode="dense"))  # starts a load
    assert started.wait(10)
    closer = threading.Thread(target=lambda: (runtime.close(), events.append("closed")))
    closer.start()
    closer.join(0.3)
    assert closer.is_alive(), "close() returned while the load was still reading the store"
    release.set()
    closer.join(10)
    assert events == ["loaded", "closed"]
