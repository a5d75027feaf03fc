"""`memproc purge` and `memproc vacuum`: on PostgreSQL, a purged memory's text stays in the
table and index files (old row versions) until `vacuum` rewrites them, and is gone from every
file of the tables a purge touches afterwards; on SQLite the purge alone leaves nothing in
the database file, and `--vacuum` says so.

These tests read the server's own files (the test server runs on this machine, as this user
or as one this root user can read): they show what is in the table, index and TOAST files. They
cannot show the server's WAL, which keeps the old text until the server recycles it, nor any
base backup or replica: that is the operator's (see the README)."""

from __future__ import annotations

import json
from pathlib import Path

import psycopg

from datakit import call, memproc
from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.store.postgres.database import PURGED_TABLES

# A word no stemmer changes, so the lexical tables hold it as written.
SECRET = "zqxwvkjtoken"


def _remember_secret(db: str) -> str:
    runtime = Runtime(Config(db=db, embedder="none", synchronous="normal"))
    try:
        ctx = OpContext(runtime=runtime)
        for n in range(20):
            call(ctx, "memory.remember", {"scope": "s", "kind": "note", "content": f"filler {n}"})
        made = call(ctx, "memory.remember",
                    {"scope": "s", "kind": "note", "content": f"the key is {SECRET}"})  # fmt: skip
        edit = {"content": f"the key is {SECRET} again", "reason": "r"}
        call(ctx, "memory.edit", {"scope": "s", "id": made["id"], **edit})
        return str(made["id"])
    finally:
        runtime.close()


def _files_holding_secret(url: str) -> list[str]:
    """Every file of the purged tables (heap, indexes, TOAST) whose bytes hold the secret,
    after a CHECKPOINT has written the shared buffers out."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CHECKPOINT")
        data_dir = conn.execute("SELECT current_setting('data_directory')").fetchone()[0]
        rows = conn.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class AS c WHERE c.oid IN ("
            " SELECT t.oid FROM pg_class AS t WHERE t.relname = ANY (%(t)s)"
            " UNION SELECT i.indexrelid FROM pg_index AS i JOIN pg_class AS t"
            "  ON t.oid = i.indrelid WHERE t.relname = ANY (%(t)s)"
            " UNION SELECT t.reltoastrelid FROM pg_class AS t WHERE t.relname = ANY (%(t)s))",
            {"t": list(PURGED_TABLES)},
        ).fetchall()
    found = []
    for (relative,) in rows:
        if relative is None:
            continue
        main = Path(data_dir) / relative
        # The relation's file and its 1 GB segments (`<file>.1`, ...).
        for segment in [main, *main.parent.glob(f"{main.name}.*")]:
            if segment.exists() and SECRET.encode() in segment.read_bytes():
                found.append(str(segment.relative_to(data_dir)))
    return found


def test_postgres_keeps_purged_text_in_its_files_until_vacuum(pg_url: str) -> None:
    memory_id = _remember_secret(pg_url)
    purged = memproc("purge", "--db", pg_url, "--scope", "s", "--id", memory_id, "--reason", "key")
    assert purged.returncode == 0, purged.stderr
    assert json.loads(purged.stdout)["status"] == "purged"
    assert _files_holding_secret(pg_url), "the old row versions should still hold the text"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        for table in PURGED_TABLES:
            conn.execute(f"VACUUM {table}")  # plain: frees the space, leaves the bytes
    assert _files_holding_secret(pg_url), "why `memproc vacuum` runs VACUUM FULL"

    vacuumed = memproc("vacuum", "--db", pg_url)
    assert vacuumed.returncode == 0, vacuumed.stderr
    assert "VACUUM FULL" in vacuumed.stderr and "memories" in vacuumed.stderr
    assert vacuumed.stdout == ""
    assert _files_holding_secret(pg_url) == []


def test_purge_with_vacuum_on_postgres_leaves_no_copy_in_the_table_files(pg_url: str) -> None:
    memory_id = _remember_secret(pg_url)
    done = memproc("purge", "--db", pg_url, "--scope", "s", "--id", memory_id,
                   "--reason", "key", "--vacuum")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert _files_holding_secret(pg_url) == []


def test_purge_with_vacuum_on_sqlite_says_the_purge_did_it(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    memory_id = _remember_secret(str(db))
    done = memproc("purge", "--db", str(db), "--scope", "s", "--id", memory_id,
                   "--reason", "key", "--vacuum")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "SQLite" in done.stderr and "secure_delete" in done.stderr
    leftovers = [p for p in tmp_path.iterdir() if SECRET.encode() in p.read_bytes()]
    assert leftovers == []


def test_purging_an_unknown_memory_is_a_usage_error(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    _remember_secret(str(db))
    done = memproc("purge", "--db", str(db), "--scope", "s", "--id", "0" * 26, "--reason", "r")
    assert done.returncode == 2
    assert "not_found" in done.stderr or "invalid_params" in done.stderr
    assert done.stdout == ""
