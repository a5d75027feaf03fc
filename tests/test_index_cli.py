"""`memproc index verify | rebuild` as a user runs it: a subprocess over a real database."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from indexkit import damage, fill_indexed


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
    return fill_indexed(tmp_path / "memory.db", minilm_dir.parent)


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
