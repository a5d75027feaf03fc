"""`index verify` and `index rebuild`'s SQL on both stores, and the lexical channel's drift as
PostgreSQL finds and repairs it (what FTS5's integrity check and rebuild do on SQLite)."""

from __future__ import annotations

import re
import struct
from collections.abc import Callable
from typing import Any

from memproc.store import Store, maintenance, vectors
from memproc.store import memories as memory_sql
from memproc.store.postgres import maintenance as pg_maintenance
from memproc.store.postgres.database import PgStore
from memproc.store.records import NewMemory
from memproc.store.storage import Storage

NewMemoryFactory = Callable[..., NewMemory]


def test_the_vector_extension_reports_its_version(any_store: Storage) -> None:
    with any_store.reading() as conn:
        version = maintenance.sqlite_vec_version(conn)
    assert re.fullmatch(r"v?\d+\.\d+\.\d+", version), version


def test_verify_counts_memories_and_finds_a_sound_index(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    with any_store.writing() as conn:
        memory_sql.insert(conn, new_memory("kept"))
        _, gone = memory_sql.insert(conn, new_memory("dropped"))
        memory_sql.set_status(conn, gone, "forgotten", None)
        memory_sql.insert(conn, new_memory("tagged", tags=["t"], context="before"))
    # The store's own writes keep the lexical index sound, with nothing rebuilt.
    with any_store.reading() as conn:
        report = maintenance.verify(conn)
    assert (report.memories, report.memories_searchable) == (3, 2)
    assert report.fts_ok and report.fts_error is None and report.embedders == []
    assert report.clean
    with any_store.writing() as conn:
        maintenance.rebuild_fts(conn)
    with any_store.reading() as conn:
        assert maintenance.verify(conn) == report


def _problems(store: PgStore) -> list[str]:
    with store.reading() as conn:
        return pg_maintenance.lexical_problems(conn)


def test_lexical_drift_is_found_and_a_rebuild_repairs_it(
    pg_store: PgStore, new_memory: NewMemoryFactory
) -> None:
    with pg_store.writing() as conn:
        for content in ("the build cache", "a cache of builds", "deploys need tokens"):
            memory_sql.insert(conn, new_memory(content, tags=["ci"]))
        maintenance.rebuild_fts(conn)
    assert _problems(pg_store) == [] and pg_store.integrity_check() == ["ok"]

    with pg_store.writing() as conn:  # by hand, around memproc: text changed, vector not
        conn.execute("UPDATE memories SET content = 'zebras graze' WHERE content LIKE 'deploys%'")
    assert _problems(pg_store) == ["1 rows of memories have a lexical vector not of their text"]

    with pg_store.writing() as conn:
        conn.execute("UPDATE lexical_totals SET tokens = tokens + 7 WHERE corpus = 'memories'")
        conn.execute("DELETE FROM lexical_terms WHERE corpus = 'memories' AND lexeme = 'cach'")
        conn.execute("UPDATE lexical_terms SET docs = 9 WHERE lexeme = 'build'")
    assert _problems(pg_store) == [
        "1 rows of memories have a lexical vector not of their text",
        "the lexical totals of memories disagree with its rows",
        "2 term counts of memories disagree with its rows",
    ]
    assert pg_store.integrity_check() != ["ok"]

    with pg_store.writing() as conn:
        maintenance.rebuild_fts(conn)
    assert _problems(pg_store) == [] and pg_store.integrity_check() == ["ok"]
    with pg_store.reading() as conn:
        found = conn.execute(
            "SELECT content FROM memories WHERE lex @@ to_tsquery('memproc', 'zebra')"
        ).fetchall()
        assert found == [("zebras graze",)]
        docs = conn.execute(
            "SELECT docs FROM lexical_terms WHERE corpus = 'memories' AND lexeme = 'cach'"
        ).fetchone()
        assert docs == (2,)
        assert conn.execute(
            "SELECT count(*) FROM lexical_terms WHERE lexeme = 'deploy'"
        ).fetchone() == (0,)


def test_a_rebuild_of_a_sound_index_changes_nothing(
    pg_store: PgStore, new_memory: NewMemoryFactory
) -> None:
    with pg_store.writing() as conn:
        memory_sql.insert(conn, new_memory("one row", context="some context"))
        maintenance.rebuild_fts(conn)
    with pg_store.reading() as conn:
        before = conn.execute("SELECT lex, lex_tokens FROM memories").fetchall()
        terms = conn.execute("SELECT * FROM lexical_terms ORDER BY corpus, lexeme").fetchall()
    with pg_store.writing() as conn:
        maintenance.rebuild_fts(conn)
    with pg_store.reading() as conn:
        assert conn.execute("SELECT lex, lex_tokens FROM memories").fetchall() == before
        assert (
            conn.execute("SELECT * FROM lexical_terms ORDER BY corpus, lexeme").fetchall() == terms
        )
    assert before[0][1] == 4  # one, row, some, context: every class counts in the length


def _vector(*values: float) -> bytes:
    return struct.pack(f"<{len(values)}f", *values)


def _by_hand(store: Storage, conn: Any, sql: str, *args: object) -> None:
    """A change made around memproc (as an operator or a bug could), in the store's dialect."""
    conn.execute(sql if isinstance(store, Store) else sql.replace("?", "%s"), args)


def test_vector_drift_is_counted_alike_and_the_drop_removes_it(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    with any_store.writing() as conn:
        row = vectors.register_embedder(conn, "test", "fp-test", 4)
        seqs = [memory_sql.insert(conn, new_memory(f"memory {n}"))[1] for n in range(5)]
        for n, pending in enumerate(vectors.pending_memories(conn, row, 10)):
            vectors.put_vectors(conn, row, pending, [_vector(1, n, 0, 1)])
    with any_store.reading() as conn:
        (drift,) = maintenance.verify(conn).embedders
    assert (drift.missing_or_stale, drift.orphan_vectors, drift.chunk_mismatches) == (0, 0, 0)
    assert drift.clean and drift.inactive_with_vectors == 0

    kept_row, lost_record, deactivated, deleted, fine = seqs
    with any_store.writing() as conn:
        _by_hand(any_store, conn, "DELETE FROM vector_rows WHERE memory_seq = ?", kept_row)
        _by_hand(any_store, conn, "DELETE FROM memory_embeddings WHERE memory_seq = ?", lost_record)
        _by_hand(
            any_store, conn, "UPDATE memories SET status = 'forgotten' WHERE seq = ?", deactivated
        )
        _by_hand(any_store, conn, "DELETE FROM memories WHERE seq = ?", deleted)
    with any_store.reading() as conn:
        report = maintenance.verify(conn)
    (drift,) = report.embedders
    assert not report.clean and report.fts_ok
    assert drift.chunk_mismatches == 1  # kept_row's record counts a row that is gone
    assert drift.missing_or_stale == 1  # lost_record has no embedding record
    assert drift.inactive_with_vectors == 1  # deactivated kept its vectors
    assert drift.orphan_vectors == 2  # kept_row's unlisted vector, deleted's memoryless one

    with any_store.writing() as conn:
        # kept_row, deactivated and deleted's vector sets, and kept_row's unlisted vector.
        assert maintenance.drop_drifted_vectors(conn, row) == 4
    with any_store.reading() as conn:
        (drift,) = maintenance.verify(conn).embedders
        pending = [memory.seq for memory in vectors.pending_memories(conn, row, 10)]
        assert vectors.count_vector_rows(conn, row) == 2  # lost_record's and fine's
    assert drift.clean and (drift.orphan_vectors, drift.chunk_mismatches) == (0, 0)
    assert pending == [kept_row, lost_record] and fine not in pending
