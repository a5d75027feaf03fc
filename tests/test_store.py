"""The Store on real SQLite files: migrations, connection set-up, transactions, cancellation,
tracing, memories' SQL, and two Store objects sharing one file as two processes would."""

from __future__ import annotations

import json
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import apsw
import pytest

from memproc.cancel import CancelToken
from memproc.errors import Cancelled, Conflict, InternalError, StorageBusy, StorageUnavailable
from memproc.store import NewMemory, Store
from memproc.store import memories as memory_sql
from memproc.store.connection import CONNECTION_SETUP, ConnectionSettings, open_connection
from memproc.store.migrations import _SEARCH_FILTERS, LATEST_VERSION, MIGRATIONS, migrate
from memproc.store.postgres.database import PgStore
from memproc.store.quoting import fts_match_any
from memproc.store.storage import Storage

NewMemoryFactory = Callable[..., NewMemory]


@pytest.fixture
def open_stores(db_path: str) -> Iterator[Callable[..., Store]]:
    """Open extra Store objects (another process, in effect); all closed at teardown."""
    opened: list[Store] = []

    def open_store(settings: ConnectionSettings | None = None, path: str = db_path) -> Store:
        store = Store(path, settings)
        opened.append(store)
        return store

    yield open_store
    for store in opened:
        store.close()


def insert(store: Store, new: NewMemory) -> str:
    with store.writing() as conn:
        return memory_sql.insert(conn, new)[0]


def set_status_by_id(
    conn: apsw.Connection, scope: str, memory_id: str, status: str, reason: str | None
) -> None:
    record = memory_sql.get(conn, scope, memory_id)
    assert record is not None
    memory_sql.set_status(conn, record.seq, status, reason)


def count(store: Store) -> int:
    with store.reading() as conn:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])


def search(store: Store, text: str, scopes: list[str], kinds: list[str] | None = None) -> list[str]:
    match = fts_match_any(text)
    assert match is not None
    with store.reading() as conn:
        rows = memory_sql.search_lexical(conn, match, scopes=scopes, kinds=kinds, limit=50)
    return [row.record.id for row in rows]


def open_files(path: str) -> list[str]:
    """This process's open file descriptors on `path` or its -wal/-shm companions."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(os.path.realpath(path)):
            found.append(target)
    return found


# -- migrations -------------------------------------------------------------------------------


def test_a_new_database_is_migrated_to_the_latest_version(store: Store) -> None:
    with store.reading() as conn:
        assert conn.pragma("user_version") == LATEST_VERSION
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_schema")}
    assert {"memories", "memories_fts"} <= tables


def test_reopening_is_a_no_op(db_path: str) -> None:
    Store(db_path).close()
    conn = apsw.Connection(db_path)
    statements: list[str] = []
    conn.exec_trace = lambda cursor, sql, bindings: statements.append(sql) or True
    try:
        schema_before = conn.execute("SELECT * FROM sqlite_schema").fetchall()
        statements.clear()
        assert migrate(conn) == LATEST_VERSION
        assert not any(re.search(r"BEGIN|CREATE|user_version\s*=", s) for s in statements)
        assert conn.execute("SELECT * FROM sqlite_schema").fetchall() == schema_before
    finally:
        conn.close()
    again = Store(db_path)
    try:
        assert again.integrity_check() == ["ok"]
    finally:
        again.close()


def test_a_database_of_the_previous_version_gains_the_search_filter_index(db_path: str) -> None:
    """Made by the migrations before the index, with memories in it: opened now, it is
    migrated, and the lexical channel's filtered join (which names the index) finds them."""
    conn = open_connection(db_path, ConnectionSettings())
    for version, step in enumerate(MIGRATIONS[: MIGRATIONS.index(_SEARCH_FILTERS)], start=1):
        conn.execute(step)
        conn.pragma("user_version", version)
    assert "memories_search_filters" not in conn.execute("SELECT name FROM sqlite_master").get
    for seq, scope in enumerate(["a", "b", "b", "b", "a"], start=1):
        conn.execute(
            "INSERT INTO memories (seq, id, scope, kind, content, content_sha256, tags, "
            "metadata, source, importance, status, created_at, updated_at) VALUES "
            "(?, ?, ?, 'note', 'ibis', 'h', '[]', '{}', '{}', 0.5, 'active', "
            "'2026-01-01T00:00:00.000Z', '2026-01-01T00:00:00.000Z')",
            (seq, f"m{seq}", scope),
        )
    conn.close()
    store = Store(db_path)  # a store this small is searched by the filtered join
    try:
        with store.reading() as conn:
            assert conn.pragma("user_version") == LATEST_VERSION
            indexes = {row[1] for row in conn.execute("PRAGMA index_list(memories)")}
            rows = memory_sql.search_lexical(conn, '"ibis"', scopes=["a"], kinds=None, limit=2)
        assert "memories_search_filters" in indexes
        assert [row.record.id for row in rows] == ["m1", "m5"]
        assert store.integrity_check() == ["ok"]
    finally:
        store.close()


def test_a_database_from_newer_code_is_refused_and_left_alone(db_path: str) -> None:
    Store(db_path).close()
    conn = apsw.Connection(db_path)
    conn.pragma("user_version", LATEST_VERSION + 1)
    conn.close()
    with pytest.raises(StorageUnavailable) as caught:
        Store(db_path)
    assert caught.value.data["reason"] == "schema_too_new"
    assert caught.value.data["schema_version"] == LATEST_VERSION + 1
    # The error is kept (a Runtime remembers it), yet the file must not stay open.
    assert open_files(db_path) == []
    conn = apsw.Connection(db_path)
    try:
        assert conn.pragma("user_version") == LATEST_VERSION + 1
    finally:
        conn.close()


def test_a_file_that_is_not_a_database_is_refused_with_a_typed_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    content = b"this is not a database, just some text that is long enough " * 100
    path.write_bytes(content)
    with pytest.raises(StorageUnavailable) as caught:
        Store(str(path))
    assert caught.value.data == {"reason": "not_a_database"}
    assert path.read_bytes() == content
    assert open_files(str(path)) == []


def test_a_directory_cannot_be_opened(tmp_path: Path) -> None:
    with pytest.raises(StorageUnavailable) as caught:
        Store(str(tmp_path))
    assert caught.value.data["reason"] == "cannot_open"


# -- connection set-up ------------------------------------------------------------------------


def _settings_of(conn: apsw.Connection) -> dict[str, object]:
    return {
        "journal_mode": conn.pragma("journal_mode"),
        "foreign_keys": conn.pragma("foreign_keys"),
        "synchronous": conn.pragma("synchronous"),
        "secure_delete": conn.pragma("secure_delete"),
        "busy_timeout": conn.pragma("busy_timeout"),
        "vec_version": conn.execute("SELECT vec_version()").fetchone()[0],
    }


def test_connection_setup_is_applied_to_reader_and_writer(db_path: str) -> None:
    store = Store(db_path)  # the defaults, not the `store` fixture's faster settings
    with store.reading() as conn:
        reader = _settings_of(conn)
    with store.writing() as conn:
        writer = _settings_of(conn)
    assert reader == writer
    assert reader["journal_mode"] == "wal"
    assert reader["foreign_keys"] == 1
    assert reader["synchronous"] == 2  # FULL
    assert reader["secure_delete"] == 1
    assert reader["busy_timeout"] == 5000
    assert str(reader["vec_version"]).startswith("v")
    store.close()


def test_settings_are_honoured(db_path: str) -> None:
    store = Store(db_path, ConnectionSettings(busy_timeout_ms=123, synchronous="normal"))
    try:
        with store.reading() as conn:
            assert (conn.pragma("busy_timeout"), conn.pragma("synchronous")) == (123, 1)
    finally:
        store.close()


def test_double_quoted_strings_are_identifiers_only(store: Store) -> None:
    with pytest.raises(InternalError) as caught, store.reading() as conn:
        conn.execute('SELECT "no_such_column" FROM memories')
    assert isinstance(caught.value.__cause__, apsw.SQLError)
    assert "no such column" in str(caught.value.__cause__)


def test_every_setup_step_explains_why() -> None:
    for step in CONNECTION_SETUP:
        assert step.__doc__ and len(step.__doc__.split()) >= 5, step.__name__


# -- transactions -----------------------------------------------------------------------------


def test_a_failed_write_transaction_leaves_nothing_behind(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    with pytest.raises(RuntimeError), store.writing() as conn:
        memory_sql.insert(conn, new_memory("unicorn one"))
        memory_sql.insert(conn, new_memory("unicorn two"))
        raise RuntimeError("boom")
    assert count(store) == 0
    assert search(store, "unicorn", ["proj"]) == []
    kept = insert(store, new_memory("unicorn three"))
    assert search(store, "unicorn", ["proj"]) == [kept]


def test_a_constraint_failure_rolls_back_the_whole_transaction(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    insert(store, new_memory("first", client_token="t"))
    with pytest.raises(Conflict), store.writing() as conn:
        memory_sql.insert(conn, new_memory("second"))
        memory_sql.insert(conn, new_memory("third", client_token="t"))
    assert count(store) == 1


def test_a_write_cancelled_before_commit_rolls_back(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    token = CancelToken()
    with pytest.raises(Cancelled), store.writing(token) as conn:
        memory_sql.insert(conn, new_memory("never stored"))
        assert token.cancel() is True
    assert count(store) == 0
    assert insert(store, new_memory("stored")) is not None
    assert count(store) == 1


def test_a_committed_write_seals_its_token(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    token = CancelToken()
    with any_store.writing(token) as conn:
        memory_sql.insert(conn, new_memory("stored"))
    assert token.cancel() is False
    assert token.cancelled is False
    assert count(any_store) == 1


def test_a_long_read_is_interrupted_when_cancelled_from_another_thread(store: Store) -> None:
    token = CancelToken()
    started = threading.Event()
    store.add_tracer(lambda cursor, sql, bindings: started.set() if "RECURSIVE" in sql else None)

    def cancel_once_started() -> None:
        started.wait(30)
        token.cancel()

    canceller = threading.Thread(target=cancel_once_started)
    canceller.start()
    try:
        with pytest.raises(Cancelled), store.reading(token) as conn:
            conn.execute(
                "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c "
                "WHERE x < 100000000) SELECT count(*) FROM c"
            ).fetchall()
    finally:
        canceller.join()
    assert started.is_set()
    assert count(store) == 0  # the connection is usable afterwards


def test_a_running_statement_on_postgres_is_cancelled_from_another_thread(
    pg_store: PgStore,
) -> None:
    """The server stops the statement itself: the request does not wait for it to end."""
    token = CancelToken()
    canceller = threading.Timer(0.5, token.cancel)
    canceller.start()
    started = time.monotonic()
    try:
        with pytest.raises(Cancelled), pg_store.reading(token) as conn:
            conn.execute("SELECT pg_sleep(30)").fetchall()
    finally:
        canceller.join()
    assert time.monotonic() - started < 20
    with pg_store.reading() as conn:  # the pooled connection is usable afterwards
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_reads_see_a_consistent_snapshot(any_store: Storage, new_memory: NewMemoryFactory) -> None:
    insert(any_store, new_memory("one"))
    results: list[int] = []
    with any_store.reading() as conn:
        results.append(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
        writer = threading.Thread(target=insert, args=(any_store, new_memory("two")))
        writer.start()
        writer.join()
        results.append(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    assert results == [1, 1]
    assert count(any_store) == 2


# -- tracing ----------------------------------------------------------------------------------


def test_tracer_shows_search_uses_only_bound_parameters(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    insert(store, new_memory("zebra crossing"))
    traced: list[tuple[str, object]] = []
    store.add_tracer(lambda cursor, sql, bindings: traced.append((sql, bindings)))
    hostile = "zebra'); DROP TABLE memories; --"
    assert len(search(store, hostile, ["proj"])) == 1
    (match_sql, bindings) = next((s, b) for s, b in traced if "MATCH" in s)
    assert re.search(r"MATCH\s+[:?@$]\w*", match_sql)
    assert isinstance(bindings, dict)
    assert bindings["match"] == fts_match_any(hostile)
    for sql, _ in traced:
        assert "zebra" not in sql
        assert "DROP" not in sql


def test_tracer_shows_inserted_content_is_bound(store: Store, new_memory: NewMemoryFactory) -> None:
    traced: list[tuple[str, object]] = []
    store.add_tracer(lambda cursor, sql, bindings: traced.append((sql, bindings)))
    insert(store, new_memory("a secret value 'quoted'", scope="the-scope"))
    sqls = [sql for sql, _ in traced]
    assert any(sql.startswith("INSERT INTO memories") for sql in sqls)
    assert "BEGIN IMMEDIATE" in sqls and "COMMIT" in sqls
    assert not any("secret" in sql or "the-scope" in sql for sql in sqls)
    assert any(isinstance(b, tuple) and "a secret value 'quoted'" in b for _, b in traced)


def test_tracer_applies_to_connections_opened_later(store: Store) -> None:
    traced: list[str] = []
    store.add_tracer(lambda cursor, sql, bindings: traced.append(sql))
    done = threading.Thread(target=count, args=(store,))  # a new thread opens a new reader
    done.start()
    done.join()
    assert any("count(*)" in sql for sql in traced)


# -- memories' SQL ----------------------------------------------------------------------------


def query_plan(store: Store, sql: str, bindings: object) -> list[str]:
    with store.reading() as conn:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings)]


def test_statuses_look_memories_up_by_id(store: Store, new_memory: NewMemoryFactory) -> None:
    """Not by walking the scope: that cost every remember 67 ms at 100,000 memories."""
    memory_id = insert(store, new_memory("cited"))
    traced: list[tuple[str, object]] = []
    store.add_tracer(lambda cursor, sql, bindings: traced.append((sql, bindings)))
    with store.reading() as conn:
        assert memory_sql.statuses(conn, "proj", [memory_id, "absent"]) == {memory_id: "active"}
        assert memory_sql.statuses(conn, "other", [memory_id]) == {}
        lookups = len(traced)
        assert memory_sql.statuses(conn, "proj", []) == {}
        assert len(traced) == lookups  # no ids, no statement
    sql, bindings = next((s, b) for s, b in traced if "status" in s)
    plan = query_plan(store, sql, bindings)
    assert any("(id=?)" in step for step in plan), plan
    assert not any("memories_by_scope" in step for step in plan), plan


def test_integrity_check_is_ok(any_store: Storage, new_memory: NewMemoryFactory) -> None:
    for i in range(20):
        insert(any_store, new_memory(f"memory number {i}"))
    with any_store.writing() as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM memories LIMIT 5")]
        for memory_id in ids:
            set_status_by_id(conn, "proj", memory_id, "forgotten", None)
    assert any_store.integrity_check() == ["ok"]


def test_insert_and_get_round_trip(any_store: Storage, new_memory: NewMemoryFactory) -> None:
    new = new_memory(
        "use ruff",
        kind="decision",
        tags=["lint", "python"],
        metadata={"n": 1, "nested": {"ok": [1, 2]}},
        source={"harness": "h", "file": "a.py"},
        importance=0.9,
        client_token="tok",
    )
    memory_id = insert(any_store, new)
    with any_store.reading() as conn:
        record = memory_sql.get(conn, "proj", memory_id)
        assert memory_sql.get(conn, "other", memory_id) is None
        assert memory_sql.get(conn, "proj", "missing") is None
        assert memory_sql.find_by_client_token(conn, "proj", "tok") == memory_id
        assert memory_sql.find_by_client_token(conn, "other", "tok") is None
    assert record is not None
    assert (record.id, record.scope, record.kind, record.content) == (
        memory_id,
        "proj",
        "decision",
        "use ruff",
    )
    assert record.tags == ["lint", "python"]
    assert record.metadata == {"n": 1, "nested": {"ok": [1, 2]}}
    assert record.source == {"harness": "h", "file": "a.py"}
    assert (record.importance, record.status) == (0.9, "active")
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", record.created_at)
    assert record.updated_at == record.created_at


def test_list_page_is_newest_first_with_keyset_pagination(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    ids = [insert(store, new_memory(f"m{i}", kind="fact" if i % 2 else "note")) for i in range(7)]
    insert(store, new_memory("elsewhere", scope="other"))
    pages: list[list[str]] = []
    before = None
    with store.reading() as conn:
        while True:
            page = memory_sql.list_page(conn, "proj", kinds=None, before_seq=before, limit=3)
            if not page:
                break
            pages.append([r.id for r in page])
            before = page[-1].seq
        facts = memory_sql.list_page(conn, "proj", kinds=["fact"], before_seq=None, limit=10)
    assert pages == [ids[::-1][0:3], ids[::-1][3:6], ids[::-1][6:7]]
    assert [r.id for r in facts] == [ids[5], ids[3], ids[1]]


def test_set_status_hides_from_list_and_search(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    keep = insert(any_store, new_memory("penguin keep"))
    gone = insert(any_store, new_memory("penguin gone"))
    with any_store.writing() as conn:
        set_status_by_id(conn, "proj", gone, "forgotten", "no longer true")
    with any_store.reading() as conn:
        listed = memory_sql.list_page(conn, "proj", kinds=None, before_seq=None, limit=10)
        record = memory_sql.get(conn, "proj", gone)
    assert [r.id for r in listed] == [keep]
    assert record is not None and record.status == "forgotten"
    assert search(any_store, "penguin", ["proj"]) == [keep]


def test_search_respects_scopes_and_kinds(any_store: Storage, new_memory: NewMemoryFactory) -> None:
    a_fact = insert(any_store, new_memory("otter facts", scope="a", kind="fact"))
    a_note = insert(any_store, new_memory("otter notes", scope="a", kind="note"))
    b_fact = insert(any_store, new_memory("otter more", scope="b", kind="fact"))
    insert(any_store, new_memory("otter hidden", scope="c", kind="fact"))
    assert set(search(any_store, "otter", ["a"])) == {a_fact, a_note}
    assert set(search(any_store, "otter", ["a", "b"])) == {a_fact, a_note, b_fact}
    assert set(search(any_store, "otter", ["a", "b"], kinds=["fact"])) == {a_fact, b_fact}
    assert search(any_store, "otter", ["a"], kinds=["decision"]) == []
    assert search(any_store, "otter", ["nowhere"]) == []


def test_search_ranks_better_matches_first(
    any_store: Storage, new_memory: NewMemoryFactory
) -> None:
    weak = insert(any_store, new_memory("a long note that mentions a heron once among many words"))
    strong = insert(any_store, new_memory("heron heron"))
    assert search(any_store, "heron", ["proj"]) == [strong, weak]


def test_search_limit_applies_after_filtering_forgotten(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    forgotten = [insert(store, new_memory(f"lynx lynx lynx {i}")) for i in range(5)]
    live = insert(store, new_memory("lynx is a cat"))
    with store.writing() as conn:
        for memory_id in forgotten:
            set_status_by_id(conn, "proj", memory_id, "forgotten", None)
    with store.reading() as conn:
        rows = memory_sql.search_lexical(
            conn, fts_match_any("lynx") or "", scopes=["proj"], kinds=None, limit=1
        )
    assert [row.record.id for row in rows] == [live]


def reference_search(
    store: Store, match: str, scopes: list[str], kinds: list[str] | None, limit: int
) -> list[tuple[str, float]]:
    """What search_lexical must return: every match joined and filtered, then ranked."""
    with store.reading() as conn:
        rows = conn.execute(
            "SELECT m.id, bm25(memories_fts, 1.0, 0.5, 0.5) AS score FROM memories_fts "
            "JOIN memories AS m ON m.seq = memories_fts.rowid WHERE memories_fts MATCH :match "
            "AND m.scope IN (SELECT value FROM json_each(:scopes)) AND m.status = 'active' "
            "AND (:kinds IS NULL OR m.kind IN (SELECT value FROM json_each(:kinds))) "
            "ORDER BY score, m.seq LIMIT :limit",
            {
                "match": match,
                "scopes": json.dumps(scopes),
                "kinds": None if kinds is None else json.dumps(kinds),
                "limit": limit,
            },
        ).fetchall()
    return [(memory_id, score) for memory_id, score in rows]


def test_search_filters_the_ranking_first_and_joins_only_when_it_must(
    store: Store, new_memory: NewMemoryFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each path gives what filtering every match would, in the same order with the same
    scores. The ranking is read 2 x limit deep here; it is tried first when half the 6
    newest memories are servable, and the filtered query runs when they are not or when the
    ranking held too few."""
    monkeypatch.setattr(memory_sql, "LEXICAL_DEPTH_FACTOR", 2)
    monkeypatch.setattr(memory_sql, "LEXICAL_MIN_DEPTH", 1)
    monkeypatch.setattr(memory_sql, "LEXICAL_SAMPLE", 6)
    monkeypatch.setattr(memory_sql, "LEXICAL_RANK_FIRST_FROM", 0)
    for i in range(30):  # the best matches (short, the word twice), and the oldest
        insert(store, new_memory(f"wren wren {i}", scope="many"))
    for i in range(8):  # the newest
        kind = "fact" if i % 2 else "note"
        insert(
            store, new_memory(f"a wren seen {i} " + "and more words " * i, scope="few", kind=kind)
        )
    with store.writing() as conn:
        few = memory_sql.list_page(conn, "few", kinds=None, before_seq=None, limit=10)
        memory_sql.set_status(conn, few[-1].seq, "forgotten", None)
    traced: list[str] = []
    store.add_tracer(lambda cursor, sql, bindings: traced.append(sql))
    match = fts_match_any("wren") or ""
    cases = [
        (["few"], None, 3, ["ranking", "join"]),  # newest are few's, best matches many's
        (["many"], None, 3, ["join"]),  # none of the newest is many's
        (["few", "many"], None, 5, ["ranking"]),
        (["few"], ["fact"], 2, None),
    ]
    for scopes, kinds, limit, paths in cases:
        traced.clear()
        with store.reading() as conn:
            rows = memory_sql.search_lexical(conn, match, scopes=scopes, kinds=kinds, limit=limit)
        ran = ["join" if "INDEXED BY" in sql else "ranking" for sql in traced if "MATCH" in sql]
        assert paths is None or ran == paths, (scopes, ran)
        assert [(r.record.id, r.bm25) for r in rows] == reference_search(
            store, match, scopes, kinds, limit
        )


def test_duplicate_lookup_ignores_forgotten_and_other_kinds(
    store: Store, new_memory: NewMemoryFactory
) -> None:
    first = insert(store, new_memory("same text"))
    with store.reading() as conn:
        assert memory_sql.find_live_duplicate(conn, new_memory("same text")) == first
        assert memory_sql.find_live_duplicate(conn, new_memory("same text", kind="fact")) is None
        assert memory_sql.find_live_duplicate(conn, new_memory("same text", scope="x")) is None
        assert memory_sql.find_live_duplicate(conn, new_memory("same text.")) is None
    with store.writing() as conn:
        set_status_by_id(conn, "proj", first, "forgotten", None)
    with store.reading() as conn:
        assert memory_sql.find_live_duplicate(conn, new_memory("same text")) is None


# -- two Store objects on one file (two processes, in effect) ---------------------------------


def test_two_stores_on_one_file_see_each_others_writes(
    open_stores: Callable[..., Store], new_memory: NewMemoryFactory
) -> None:
    first, second = open_stores(), open_stores()
    from_first = insert(first, new_memory("badger from first"))
    from_second = insert(second, new_memory("badger from second"))
    assert set(search(first, "badger", ["proj"])) == {from_first, from_second}
    assert set(search(second, "badger", ["proj"])) == {from_first, from_second}
    assert first.integrity_check() == ["ok"]


def test_a_held_write_lock_makes_the_other_writer_busy_and_retryable(
    open_stores: Callable[..., Store], new_memory: NewMemoryFactory
) -> None:
    holder = open_stores()
    impatient = open_stores(ConnectionSettings(busy_timeout_ms=50))
    with holder.writing() as conn:
        memory_sql.insert(conn, new_memory("held"))
        with pytest.raises(StorageBusy) as caught:
            insert(impatient, new_memory("blocked"))
        assert count(impatient) == 0  # readers are not blocked, and see no uncommitted rows
    assert caught.value.is_retryable() is True
    assert caught.value.wire_data()["retryable"] is True
    assert insert(impatient, new_memory("retried")) is not None
    assert count(holder) == 2


def test_close_is_idempotent(db_path: str) -> None:
    store = Store(db_path)
    store.close()
    store.close()
    assert open_files(db_path) == []
