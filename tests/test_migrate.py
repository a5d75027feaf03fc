"""`memproc migrate`: a store holding every family, thread windows, validity windows and MiniLM
vectors moves from an SQLite file to PostgreSQL and back to another file, each side counted and
digested equal, vectors carried (nothing left for the backfill to embed) and searches answering
with the same ids; a destination that holds anything is refused and left as it was; an
unreachable server is a clear error that never shows the password."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from datakit import call, fill, fill_with, memproc
from memproc.config import Config
from memproc.migrate_cli import Tally, tally
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.store import Store, open_store, vector_transfer
from memproc.store import vectors as vector_sql
from searchkit import OpenRuntime, ids, search, settle

QUERIES = ("which database version", "how do releases get pushed", "kitten napping on a couch")


def _fill_everything(runtime: Runtime) -> None:
    """Every export family (datakit), plus a thread of turns and a validity window, with the
    embedder loaded so memories and procedure versions get vectors."""
    ctx = OpContext(runtime=runtime)
    fill_with(ctx, "proj")
    for turn, text in enumerate(("the cat sleeps on the sofa", "it purrs", "then it wakes")):
        call(ctx, "memory.remember", {"scope": "proj", "kind": "note", "content": text,
                                      "thread": "chat-1",
                                      "occurred_at": f"2025-01-01T00:00:0{turn}Z"})  # fmt: skip
    call(ctx, "memory.remember", {"scope": "proj", "kind": "fact", "content": "office in Lyon",
                                  "valid_from": "2020-01-01T00:00:00Z",
                                  "valid_until": "2024-01-01T00:00:00Z"})  # fmt: skip
    assert runtime.vectors.caught_up(60.0)


def _side(db: str) -> Tally:
    store = open_store(Config(db=db, synchronous="normal"))
    try:
        with store.reading() as conn:
            return tally(conn)
    finally:
        store.close()


def _migrate(source: str, dest: str) -> dict[str, Any]:
    done = memproc("migrate", "--from", source, "--to", dest, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _pending(db: str) -> int:
    """Searchable memories lacking current vectors for any registered embedder, read before
    any service could start a backfill (0: every vector was carried)."""
    store = open_store(Config(db=db, synchronous="normal"))
    try:
        with store.reading() as conn:
            rows = [row for row, _ in vector_transfer.embedder_records(conn)]
            assert rows, "no embedder registered"
            return sum(vector_sql.count_pending(conn, row) for row in rows)
    finally:
        store.close()


def _answers(open_runtime: OpenRuntime, db: str) -> list[list[str]]:
    runtime = open_runtime(db)
    try:
        return [ids(search(runtime, query, mode="dense")) for query in QUERIES]
    finally:
        settle()


def test_a_store_moves_to_postgres_and_back_whole(
    tmp_path: Path, pg_url: str, open_runtime: OpenRuntime
) -> None:
    source = str(tmp_path / "source.db")
    _fill_everything(open_runtime(source))
    settle()
    original = _side(source)
    empty = [name for name, count in original.counts.items() if count == 0]
    assert empty == [], f"the test store lacks {empty}"

    there = _migrate(f"sqlite:{source}", pg_url)
    back_path = str(tmp_path / "back.db")
    back = _migrate(pg_url, f"sqlite:{back_path}")

    for summary in (there, back):
        assert summary["counts"] == original.counts
        assert summary["records_sha256"] == original.records_sha256
        assert summary["vectors_sha256"] == original.vectors_sha256
    assert _side(pg_url) == original
    assert _side(back_path) == original

    assert [_pending(db) for db in (source, pg_url, back_path)] == [0, 0, 0]
    expected = _answers(open_runtime, source)
    assert all(expected)
    assert _answers(open_runtime, pg_url) == expected
    assert _answers(open_runtime, back_path) == expected


def test_sqlite_to_sqlite_prints_a_summary_and_only_that_on_stdout(tmp_path: Path) -> None:
    source, dest = tmp_path / "a.db", tmp_path / "b.db"
    fill(source)
    done = memproc("migrate", "--from", f"sqlite:{source}", "--to", str(dest))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"migrated sqlite:{source} -> sqlite:{dest}"
    assert lines[-1].startswith("verified")
    assert "migrate:" in done.stderr  # the progress lines
    assert _side(str(dest)) == _side(str(source))


def test_a_destination_that_holds_records_is_refused_and_left_unchanged(
    tmp_path: Path, pg_url: str
) -> None:
    source = tmp_path / "source.db"
    runtime = Runtime(Config(db=str(source), embedder="none", synchronous="normal"))
    try:
        call(OpContext(runtime=runtime), "memory.remember",
             {"scope": "s", "kind": "note", "content": "to move"})  # fmt: skip
    finally:
        runtime.close()
    held = Runtime(Config(db=pg_url, embedder="none"))
    try:
        call(OpContext(runtime=held), "memory.remember",
             {"scope": "t", "kind": "note", "content": "already here"})  # fmt: skip
    finally:
        held.close()
    before = _side(pg_url)

    done = memproc("migrate", "--from", f"sqlite:{source}", "--to", pg_url)
    assert done.returncode == 2
    assert "already holds records (memory 1, " in done.stderr
    assert "empty store" in done.stderr
    assert done.stdout == ""
    assert _side(pg_url) == before


def test_an_unreachable_server_is_a_clear_error_without_the_password(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    Store(str(source)).close()
    url = "postgresql://memproc:s3cr3t-pw@127.0.0.1:1/memproc"
    done = memproc("migrate", "--from", f"sqlite:{source}", "--to", url)
    assert done.returncode == 1
    assert "storage_unavailable" in done.stderr and "cannot reach" in done.stderr
    assert "s3cr3t-pw" not in done.stderr + done.stdout
    assert done.stdout == ""


@pytest.mark.parametrize(
    ("source", "dest", "message"),
    [
        ("sqlite:{tmp}/missing.db", "sqlite:{tmp}/new.db", "no database at"),
        ("sqlite:{tmp}/a.db", "{tmp}/a.db", "the same store"),
        ("mysql://h/db", "sqlite:{tmp}/new.db", "must be sqlite:PATH or a postgresql:// URL"),
    ],
)
def test_bad_locations_are_usage_errors_that_create_nothing(
    tmp_path: Path, source: str, dest: str, message: str
) -> None:
    Store(str(tmp_path / "a.db")).close()
    done = memproc("migrate", "--from", source.format(tmp=tmp_path),
                   "--to", dest.format(tmp=tmp_path))  # fmt: skip
    assert done.returncode == 2
    assert message in done.stderr
    assert not (tmp_path / "new.db").exists()
