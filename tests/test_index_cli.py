"""`memproc index verify | rebuild` as a user runs it: a subprocess over a real database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.runtime import Runtime
from memproc.wire.messages import RememberBatchParams, RememberItem


def index_command(action: str, db: Path, models_dir: Path) -> tuple[int, dict[str, object]]:
    command = [sys.executable, "-m", "memproc", "index", action, "--db", str(db)]
    completed = subprocess.run(
        [*command, "--models-dir", str(models_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    return completed.returncode, json.loads(completed.stdout)


@pytest.fixture
def indexed_db(tmp_path: Path, minilm_dir: Path) -> Path:
    db = tmp_path / "memory.db"
    runtime = Runtime(Config(db=str(db), models_dir=str(minilm_dir.parent), reranker="none"))
    try:
        runtime.open_store()
        runtime.models.load_now()
        items = [
            RememberItem(kind="note", content=f"release note {i} about caching") for i in range(6)
        ]
        memory_ops.remember_batch(
            OpContext(runtime=runtime), RememberBatchParams(scope="p", items=items)
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


def test_verify_is_clean_after_normal_use(indexed_db: Path, minilm_dir: Path) -> None:
    status, report = index_command("verify", indexed_db, minilm_dir.parent)
    assert status == 0
    assert report["clean"] is True and report["memories"] == 6


def test_verify_reports_drift_and_rebuild_repairs_it(indexed_db: Path, minilm_dir: Path) -> None:
    damage(indexed_db)
    status, report = index_command("verify", indexed_db, minilm_dir.parent)
    assert status == 1 and report["clean"] is False
    (embedder,) = report["embedders"]  # type: ignore[misc]
    assert embedder["orphan_vectors"] == 1
    assert embedder["missing_or_stale"] == 1
    assert report["current_embedder_missing"] == 1

    status, report = index_command("rebuild", indexed_db, minilm_dir.parent)
    assert status == 0 and report["clean"] is True
    status, report = index_command("verify", indexed_db, minilm_dir.parent)
    assert status == 0 and report["clean"] is True
