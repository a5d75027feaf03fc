"""`memproc export | import | backup` as a user runs them: subprocesses over real SQLite files."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import apsw

from datakit import fill, memproc, records_in

WRITER = """
import sys
from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.ops.memories import memory
from memproc.runtime import Runtime
from memproc.wire.messages import RememberParams

runtime = Runtime(Config(db=sys.argv[1], embedder="none", reranker="none"))
ctx = OpContext(runtime=runtime)
n = 0
while True:  # until killed
    n += 1
    result = memory.remember(ctx, RememberParams(scope="w", kind="note", content=f"write {n}"))
    print(result.id, flush=True)  # acknowledged: committed before this line is written
"""


def test_export_import_export_is_byte_identical(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    memproc(
        "export",
        "--db",
        str(tmp_path / "a.db"),
        "--scope",
        "proj",
        str(tmp_path / "a.jsonl"),
        check=True,
    )
    restored = memproc(
        "import", "--db", str(tmp_path / "b.db"), str(tmp_path / "a.jsonl"), check=True
    )
    n = records_in(tmp_path / "a.jsonl")
    assert f"imported {n} records (0 already present)" in restored.stderr
    memproc(
        "export",
        "--db",
        str(tmp_path / "b.db"),
        "--scope",
        "proj",
        str(tmp_path / "b.jsonl"),
        check=True,
    )
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    kinds = {line.split('"', 4)[3] for line in (tmp_path / "a.jsonl").read_text().splitlines()}
    assert kinds >= {"header", "memory", "memory_revision", "memory_event", "memory_access",
                     "evidence", "checkpoint", "procedure", "procedure_version", "procedure_audit",
                     "episode", "citation", "entity_alias", "end"}  # fmt: skip


def test_a_second_import_adds_nothing(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    export = str(tmp_path / "all.jsonl")
    memproc("export", "--db", str(tmp_path / "a.db"), "--all", export, check=True)
    before = table_counts(tmp_path / "a.db")
    again = memproc("import", "--db", str(tmp_path / "a.db"), export, check=True)
    assert "imported 0 records" in again.stderr
    assert table_counts(tmp_path / "a.db") == before


def exported_and_other_store(tmp_path: Path) -> tuple[Path, dict[str, int]]:
    """An export of scope "proj" from a.db, and b.db holding another scope, with its counts."""
    fill(tmp_path / "a.db")
    export = tmp_path / "a.jsonl"
    memproc("export", "--db", str(tmp_path / "a.db"), "--scope", "proj", str(export), check=True)
    fill(tmp_path / "b.db", scope="elsewhere")
    return export, table_counts(tmp_path / "b.db")


def test_a_newer_format_is_refused_and_nothing_changes(tmp_path: Path) -> None:
    export, before = exported_and_other_store(tmp_path)
    newer = tmp_path / "newer.jsonl"
    newer.write_text(export.read_text().replace('"format_version":1', '"format_version":2', 1))
    refused = memproc("import", "--db", str(tmp_path / "b.db"), str(newer))
    assert refused.returncode == 2
    assert "format 2 was written by a newer memproc" in refused.stderr
    assert table_counts(tmp_path / "b.db") == before


def test_a_damaged_file_changes_nothing(tmp_path: Path) -> None:
    """An edited record fails its hash after earlier records were inserted: all roll back."""
    export, before = exported_and_other_store(tmp_path)
    lines = export.read_text().splitlines(keepends=True)
    lines[-3] = lines[-3].replace('"proj"', '"prOj"')  # a citation: no hash of its own
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_text("".join(lines))
    failed = memproc("import", "--db", str(tmp_path / "b.db"), str(damaged))
    assert failed.returncode == 1 and "sha256 differs" in failed.stderr
    truncated = tmp_path / "truncated.jsonl"
    truncated.write_text("".join(lines[:-1]))
    failed = memproc("import", "--db", str(tmp_path / "b.db"), str(truncated))
    assert failed.returncode == 1 and "without its trailer" in failed.stderr
    assert table_counts(tmp_path / "b.db") == before


def test_backup_while_another_process_writes(tmp_path: Path) -> None:
    db = tmp_path / "live.db"
    fill(db)
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(db)], stdout=subprocess.PIPE, text=True
    )
    acked: list[str] = []
    enough = threading.Event()

    def read() -> None:
        assert writer.stdout is not None
        for line in writer.stdout:
            acked.append(line.strip())
            if len(acked) >= 50:
                enough.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert enough.wait(120), "the writer acknowledged too few writes"
        before_backup = list(acked)
        done = memproc("backup", "--db", str(db), str(tmp_path / "copy.db"), check=True)
        assert "backed up" in done.stderr
        assert writer.poll() is None  # still writing when the backup finished
    finally:
        writer.kill()
        writer.wait(30)
        reader.join(30)
        assert writer.stdout is not None
        writer.stdout.close()
    copy = apsw.Connection(str(tmp_path / "copy.db"))
    try:
        assert copy.execute("PRAGMA integrity_check").get == "ok"
        stored = {row[0] for row in copy.execute("SELECT id FROM memories WHERE scope = 'w'")}
    finally:
        copy.close()
    assert set(before_backup) <= stored


def test_backup_refuses_to_overwrite(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    (tmp_path / "taken").write_bytes(b"keep me")
    refused = memproc("backup", "--db", str(tmp_path / "a.db"), str(tmp_path / "taken"))
    assert refused.returncode == 2 and "exists" in refused.stderr
    assert (tmp_path / "taken").read_bytes() == b"keep me"


def table_counts(db: Path) -> dict[str, int]:
    conn = apsw.Connection(str(db))
    try:
        tables = [name for (name,) in conn.execute(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql NOT LIKE '%VIRTUAL%' "
            "AND name NOT LIKE '%fts%' AND name NOT LIKE 'vec%'")]  # fmt: skip
        return {t: int(conn.execute(f'SELECT count(*) FROM "{t}"').get) for t in tables}
    finally:
        conn.close()
