"""A store whose memories all have MiniLM vectors, and damage that `index verify` and
`memproc doctor` must find: shared by their tests."""

from __future__ import annotations

from pathlib import Path

from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.runtime import Runtime
from memproc.wire.messages import RememberBatchParams, RememberItem


def fill_indexed(db: Path | str, models_dir: Path, scope: str = "p") -> Path | str:
    runtime = Runtime(Config(db=str(db), models_dir=str(models_dir), reranker="none"))
    try:
        runtime.open_store()
        runtime.models.load_now()
        items = [
            RememberItem(kind="note", content=f"release note {i} about caching") for i in range(6)
        ]
        memory_ops.remember_batch(
            OpContext(runtime=runtime), RememberBatchParams(scope=scope, items=items)
        )
    finally:
        runtime.close()
    return db


def damage(db: Path) -> None:
    """Drift of every kind verify knows: an orphan vector row and a lost embedding record."""
    runtime = Runtime(Config(db=str(db), embedder="none", reranker="none"))
    try:
        with runtime.store().writing() as conn:
            conn.execute(
                "DELETE FROM vector_rows WHERE rowid = (SELECT min(rowid) FROM vector_rows)"
            )
            conn.execute("DELETE FROM memory_embeddings WHERE memory_seq = 3")
    finally:
        runtime.close()
