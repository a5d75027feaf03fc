"""`memproc doctor` as a user runs it: healthy, a corrupted model file, a drifted index."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from datakit import memproc
from indexkit import damage, fill_indexed
from modelkit import flip_byte


def doctor(db: Path | str, models_dir: Path, *extra: str) -> tuple[int, str]:
    completed = memproc("doctor", "--db", str(db), "--models-dir", str(models_dir), *extra)
    return completed.returncode, completed.stdout


def test_a_healthy_store_passes(tmp_path: Path, minilm_dir: Path) -> None:
    db = fill_indexed(tmp_path / "memory.db", minilm_dir.parent)
    status, report = doctor(db, minilm_dir.parent)
    assert status == 0, report
    assert "PROBLEM" not in report
    assert "OK       index: 6 memories, no drift" in report
    assert "OK       model minilm-l6-int8: embedder, hashes verified, one inference" in report
    status, document = doctor(db, minilm_dir.parent, "--json")
    parsed = json.loads(document)
    assert status == 0 and parsed["ok"] is True
    names = [check["name"] for check in parsed["checks"]]
    assert names[:3] == ["config", "environment", "disk"]
    assert {"integrity", "schema", "index", "wal", "model minilm-l6-int8"} <= set(names)
    assert all(set(check) == {"name", "status", "detail", "data"} for check in parsed["checks"])


def test_a_corrupted_model_file_is_named(tmp_path: Path, minilm_dir: Path) -> None:
    models = tmp_path / "models"
    shutil.copytree(minilm_dir, models / minilm_dir.name)
    flip_byte(models / minilm_dir.name / "tokenizer.json")
    db = fill_indexed(tmp_path / "memory.db", minilm_dir.parent)
    status, report = doctor(db, models)
    assert status == 1
    line = next(x for x in report.splitlines() if x.startswith("PROBLEM  model minilm-l6-int8"))
    assert "hash_mismatch: tokenizer.json has sha256" in line


def test_a_drifted_index_is_named(tmp_path: Path, minilm_dir: Path) -> None:
    db = fill_indexed(tmp_path / "memory.db", minilm_dir.parent)
    damage(db)
    status, report = doctor(db, minilm_dir.parent, "--json")
    assert status == 1
    (index,) = [c for c in json.loads(report)["checks"] if c["name"] == "index"]
    assert index["status"] == "fail"
    assert "1 orphan vectors" in index["detail"]
    assert "1 memories without vectors from the configured embedder" in index["detail"]


def test_a_missing_database_is_a_problem(tmp_path: Path, minilm_dir: Path) -> None:
    status, report = doctor(tmp_path / "absent.db", minilm_dir.parent)
    assert status == 1 and f"PROBLEM  database: no database at {tmp_path / 'absent.db'}" in report
    assert not (tmp_path / "absent.db").exists()


def test_a_healthy_postgres_store_passes(pg_url: str, minilm_dir: Path) -> None:
    """On a server store: the same checks, pgvector named, and none about a file or a disk."""
    fill_indexed(pg_url, minilm_dir.parent)
    status, report = doctor(pg_url, minilm_dir.parent, "--json")
    parsed = json.loads(report)
    assert status == 0 and parsed["ok"] is True, report
    checks = {check["name"]: check for check in parsed["checks"]}
    assert {"integrity", "schema", "index"} <= set(checks)
    assert not {"disk", "wal"} & set(checks)
    assert checks["index"]["detail"] == "6 memories, no drift"
    assert "pgvector" in checks["schema"]["detail"]
