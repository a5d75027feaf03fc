"""The lifecycle's SQL: the migration that adds it, revisions and the state-change log, the
read-time annotations, erasure and the WAL checkpoint, on real SQLite files."""

from __future__ import annotations

import threading
from collections.abc import Callable

import apsw

from memproc.store import NewMemory, Store, citations, erasure, events, revisions
from memproc.store import memories as memory_sql
from memproc.store.annotations import annotate
from memproc.store.connection import ConnectionSettings
from memproc.store.migrations import LATEST_VERSION, MIGRATIONS
from memproc.store.threads import Window

PRE_LIFECYCLE = MIGRATIONS.index(
    next(m for m in MIGRATIONS if "CREATE TABLE memory_revisions" in m)
)


def test_the_migration_gives_old_memories_a_first_revision_and_a_log(db_path: str) -> None:
    conn = apsw.Connection(db_path)
    for version, step in enumerate(MIGRATIONS[:PRE_LIFECYCLE], start=1):
        conn.execute(step)
        conn.pragma("user_version", version)
    for seq, status in ((1, "active"), (2, "forgotten")):
        conn.execute(
            "INSERT INTO memories (seq, id, scope, kind, content, content_sha256, tags, metadata, "
            "source, importance, status, status_reason, created_at, updated_at) VALUES "
            "(?, ?, 's', 'fact', ?, 'h', '[]', '{}', '{\"tool\": \"t\"}', 0.5, ?, ?, "
            "'2026-01-01T00:00:00.000Z', '2026-01-02T00:00:00.000Z')",
            (seq, f"m{seq}", f"old content {seq}", status, "stale" if seq == 2 else None),
        )
    conn.close()
    store = Store(db_path)
    try:
        with store.reading() as read:
            assert read.pragma("user_version") == LATEST_VERSION
            (first,) = revisions.list_all(read, 1)
            assert (first.revision, first.content, first.source) == (
                1,
                "old content 1",
                {"tool": "t"},
            )
            assert first.created_at == "2026-01-01T00:00:00.000Z"
            assert [(e.action, e.to_status) for e in events.list_all(read, 1)] == [
                ("remember", "active")
            ]
            log = events.list_all(read, 2)
            assert [(e.action, e.from_status, e.to_status, e.reason) for e in log] == [
                ("remember", None, "active", None),
                ("forget", "active", "forgotten", "stale"),
            ]
            record = memory_sql.get(read, "s", "m1")
            assert record is not None and (record.revision, record.superseded_by) == (1, None)
    finally:
        store.close()


def test_insert_writes_the_first_revision_and_log_entry(
    store: Store, new_memory: Callable[..., NewMemory]
) -> None:
    with store.writing() as conn:
        _, seq = memory_sql.insert(conn, new_memory("first words", source={"session": "x"}))
    with store.reading() as conn:
        assert [(r.revision, r.content) for r in revisions.list_all(conn, seq)] == [
            (1, "first words")
        ]
        (event,) = events.list_all(conn, seq)
        assert (event.action, event.to_status, event.source) == (
            "remember",
            "active",
            {"session": "x"},
        )


def test_latest_challenge_is_the_most_recent_one(
    store: Store, new_memory: Callable[..., NewMemory]
) -> None:
    with store.writing() as conn:
        _, seq = memory_sql.insert(conn, new_memory("doubted"))
        for reason in ("first doubt", "second doubt"):
            events.record(conn, seq, "challenge", "active", "challenged", reason=reason, source={})
            events.record(conn, seq, "uphold", "challenged", "active", reason=None, source={})
    with store.reading() as conn:
        assert events.latest_challenges(conn, [seq])[seq].reason == "second doubt"
        assert events.latest_challenges(conn, [seq + 1]) == {}


def test_annotations_mark_missing_and_inactive_refs_within_the_scope_only(
    store: Store, new_memory: Callable[..., NewMemory]
) -> None:
    with store.writing() as conn:
        base_id, base_seq = memory_sql.insert(conn, new_memory("base"))
        citer_id, _ = memory_sql.insert(conn, new_memory("citer"))
        memory_sql.set_status(conn, base_seq, "invalidated", None)
        citations.add(
            conn, "proj", f"memory:{citer_id}", [f"memory:{base_id}", "memory:gone", "evidence:e"]
        )
        citations.add(conn, "other", f"memory:{citer_id}", ["memory:elsewhere"])
    with store.reading() as conn:
        citer = memory_sql.get(conn, "proj", citer_id)
        assert citer is not None
        annotation = annotate(conn, [citer])[citer.seq]
    assert annotation.refs == ["evidence:e", f"memory:{base_id}", "memory:gone"]
    assert annotation.rests_on_inactive == [
        (f"memory:{base_id}", "invalidated"),
        ("memory:gone", "missing"),
    ]


def test_erase_leaves_a_tombstone_and_a_consistent_fts_index(
    store: Store, new_memory: Callable[..., NewMemory]
) -> None:
    with store.writing() as conn:
        memory_id, seq = memory_sql.insert(conn, new_memory("secret words", tags=["t"]))
        citations.add(conn, "proj", f"memory:{memory_id}", ["memory:x"])
        record = memory_sql.get(conn, "proj", memory_id)
        assert record is not None
        erasure.erase(conn, record, "2026-01-01T00:00:00.000Z", Window(before=2, after=1))
    with store.reading() as conn:
        tomb = memory_sql.get(conn, "proj", memory_id)
        assert tomb is not None
        assert (tomb.status, tomb.content, tomb.tags, tomb.metadata) == ("purged", "", [], {})
        assert revisions.list_all(conn, seq) == [] and events.list_all(conn, seq) == []
        assert citations.cited_by(conn, "proj", f"memory:{memory_id}") == []
        rows = conn.execute("SELECT rowid FROM memories_fts WHERE memories_fts MATCH 'secret'")
        assert list(rows) == []
    with store.writing() as conn:  # FTS5's own check: index and content table agree
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")


def test_checkpoint_reports_a_reader_that_kept_it_from_finishing(db_path: str) -> None:
    store = Store(db_path, ConnectionSettings(busy_timeout_ms=50))
    other = Store(db_path)
    try:
        with store.writing() as conn:
            conn.execute("CREATE TABLE t (x)")
            conn.execute("INSERT INTO t VALUES (1)")
        holding, release = threading.Event(), threading.Event()

        def hold_a_snapshot() -> None:
            with other.reading() as conn:
                conn.execute("SELECT * FROM t").fetchall()
                holding.set()
                release.wait(10)

        reader = threading.Thread(target=hold_a_snapshot)
        reader.start()
        assert holding.wait(10)
        with store.writing() as conn:
            conn.execute("INSERT INTO t VALUES (2)")
        assert store.checkpoint() is False
        release.set()
        reader.join(10)
        assert store.checkpoint() is True
    finally:
        other.close()
        store.close()
