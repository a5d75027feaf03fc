"""Validity windows over real SQLite files: the window logic of `store.validity` (what held
true at a moment, in what state), the migration of a database from before the windows, export
and import keeping them, and `as_of` meeting the dense channel with the real MiniLM model."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson
import pytest

from datakit import call, memproc
from memproc.clock import now_rfc3339
from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.store import Store, validity
from memproc.store import memories as memory_sql
from memproc.store.connection import ConnectionSettings, open_connection
from memproc.store.migrations import _VALIDITY_WINDOWS, LATEST_VERSION, MIGRATIONS
from searchkit import EMBEDDER, opener, settle

SCOPE = "proj"


def op(ctx: OpContext, method: str, **params: Any) -> dict[str, Any]:
    return call(ctx, method, {"scope": SCOPE, **params})


def remember(ctx: OpContext, content: str, **params: Any) -> str:
    params.setdefault("kind", "fact")
    return str(op(ctx, "memory.remember", content=content, **params)["id"])


def seq_of(ctx: OpContext, memory_id: str) -> int:
    with ctx.runtime.store().reading() as conn:
        record = memory_sql.get(conn, SCOPE, memory_id)
    assert record is not None
    return record.seq


def states(ctx: OpContext, ids: list[str], as_of: str, *, history: bool = False) -> dict[str, str]:
    seqs = {seq_of(ctx, memory_id): memory_id for memory_id in ids}
    with ctx.runtime.store().reading() as conn:
        found = validity.states_at(conn, list(seqs), as_of, history=history)
    return {seqs[seq]: state for seq, state in found.items()}


def test_a_window_is_half_open_and_starts_when_recorded_by_default(ctx: OpContext) -> None:
    dated = remember(ctx, "dated", valid_from="2024-01-01", valid_until="2024-02-01")
    undated = remember(ctx, "undated")
    created = op(ctx, "memory.get", id=undated)["memory"]["created_at"]
    assert states(ctx, [dated, undated], "2023-12-31T23:59:59.999Z") == {}
    assert states(ctx, [dated, undated], "2024-01-01T00:00:00.000Z") == {dated: "active"}
    assert states(ctx, [dated, undated], "2024-02-01T00:00:00.000Z") == {}
    assert states(ctx, [dated, undated], created) == {undated: "active"}


def test_a_state_counts_from_when_it_was_recorded(ctx: OpContext) -> None:
    """A challenge and an invalidation are changes of belief: before they were recorded, the
    memory was believed as it stood; a supersede is a change in the world, at its moment."""
    doubted = remember(ctx, "doubted", valid_from="2024-01-01")
    wrong = remember(ctx, "wrong", valid_from="2024-01-01")
    replaced = remember(ctx, "replaced", valid_from="2024-01-01")
    op(ctx, "memory.challenge", id=doubted, reason="unsure")
    op(ctx, "memory.invalidate", id=wrong, reason="false")
    successor = op(ctx, "memory.supersede", id=replaced, content="new", valid_from="2024-06-01")
    after = now_rfc3339()  # when every change above had been recorded
    ids = [doubted, wrong, replaced, successor["successor"]]
    assert states(ctx, ids, "2024-03-01T00:00:00.000Z") == {
        doubted: "active",
        wrong: "active",
        replaced: "active",
    }
    assert states(ctx, ids, "2024-07-01T00:00:00.000Z", history=True) == {
        doubted: "active",
        wrong: "active",
        replaced: "superseded",
        successor["successor"]: "active",
    }
    now = {doubted: "challenged", successor["successor"]: "active"}
    assert states(ctx, ids, after) == now
    assert states(ctx, ids, after, history=True) == {**now, replaced: "superseded"}


def test_a_supersede_keeps_an_earlier_end(ctx: OpContext) -> None:
    ended = remember(ctx, "ended", valid_from="2024-01-01", valid_until="2024-02-01")
    op(ctx, "memory.supersede", id=ended, content="later", valid_from="2024-05-01")
    memory = op(ctx, "memory.get", id=ended)["memory"]
    assert memory["valid_until"] == "2024-02-01T00:00:00.000Z"


def test_history_without_as_of_answers_as_of_now(ctx: OpContext) -> None:
    old = remember(ctx, "the build uses make")
    new = op(ctx, "memory.supersede", id=old, content="the build uses just")["successor"]
    found = call(ctx, "memory.search", {"scope": SCOPE, "query": "build uses", "mode": "lexical"})
    assert [hit["id"] for hit in found["results"]] == [new]
    everything = call(
        ctx,
        "memory.search",
        {"scope": SCOPE, "query": "build uses", "mode": "lexical", "include_superseded": True},
    )
    marked = {hit["id"]: (hit["status"], hit["successor"]) for hit in everything["results"]}
    assert marked == {old: ("superseded", new), new: ("active", None)}


def previous_version_db(db_path: str) -> None:
    """A database made by every migration before the windows, with an active memory and a
    memory superseded (its supersede logged at a known moment)."""
    conn = open_connection(db_path, ConnectionSettings())
    for version, step in enumerate(MIGRATIONS[: MIGRATIONS.index(_VALIDITY_WINDOWS)], start=1):
        conn.execute(step)
        conn.pragma("user_version", version)
    for seq, status, successor in ((1, "superseded", "m2"), (2, "active", None)):
        conn.execute(
            "INSERT INTO memories (seq, id, scope, kind, content, content_sha256, tags, "
            "metadata, source, importance, status, created_at, updated_at, superseded_by) "
            "VALUES (?, ?, 'proj', 'fact', ?, 'h', '[]', '{}', '{}', 0.5, ?, "
            "'2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z', ?)",
            (seq, f"m{seq}", f"the port is {8080 + seq}", status, successor),
        )
        conn.execute(
            "INSERT INTO memory_events (memory_seq, at, action, to_status, source) "
            "VALUES (?, '2025-01-01T00:00:00.000Z', 'remember', 'active', '{}')",
            (seq,),
        )
    conn.execute(
        "INSERT INTO memory_events (memory_seq, at, action, from_status, to_status, source, "
        "related) VALUES (1, '2025-03-01T00:00:00.000Z', 'supersede', 'active', 'superseded', "
        "'{}', 'm2')"
    )
    conn.close()


def test_a_database_from_before_the_windows_is_migrated(db_path: str) -> None:
    previous_version_db(db_path)
    store = Store(db_path)
    try:
        with store.reading() as conn:
            assert conn.pragma("user_version") == LATEST_VERSION
            old, new = (memory_sql.get(conn, SCOPE, f"m{n}") for n in (1, 2))
            assert old is not None and new is not None
            # The superseded memory held until its supersede was recorded; both from creation.
            assert (old.valid_from, old.valid_until) == (None, "2025-03-01T00:00:00.000Z")
            assert (new.valid_from, new.valid_until) == (None, None)
            assert validity.states_at(conn, [1, 2], "2025-02-01T00:00:00.000Z", history=False) == {
                1: "active",
                2: "active",
            }
            assert validity.states_at(conn, [1, 2], "2025-04-01T00:00:00.000Z", history=True) == {
                1: "superseded",
                2: "active",
            }
        assert store.integrity_check() == ["ok"]
    finally:
        store.close()


def fill_with_windows(db: Path) -> tuple[str, str]:
    runtime = Runtime(Config(db=str(db), embedder="none", reranker="none", synchronous="normal"))
    try:
        ctx = OpContext(runtime=runtime)
        first = remember(ctx, "the port is 8080", valid_from="2024-01-01")
        second = op(ctx, "memory.supersede", id=first, content="port 8443", valid_from="2024-03-01")
        return first, str(second["successor"])
    finally:
        runtime.close()


def get_memory(db: Path, memory_id: str) -> dict[str, Any]:
    runtime = Runtime(Config(db=str(db), embedder="none", reranker="none"))
    try:
        return op(OpContext(runtime=runtime), "memory.get", id=memory_id)["memory"]
    finally:
        runtime.close()


def test_export_and_import_keep_the_windows(tmp_path: Path) -> None:
    first, second = fill_with_windows(tmp_path / "a.db")
    export = tmp_path / "a.jsonl"
    memproc("export", "--db", str(tmp_path / "a.db"), "--scope", SCOPE, str(export), check=True)
    memproc("import", "--db", str(tmp_path / "b.db"), str(export), check=True)
    for memory_id in (first, second):
        assert get_memory(tmp_path / "b.db", memory_id) == get_memory(tmp_path / "a.db", memory_id)


def test_an_export_from_before_the_windows_still_imports(tmp_path: Path) -> None:
    """Memory records without the window columns (an older memproc's export) import as
    windows open from when each memory was recorded."""
    first, _ = fill_with_windows(tmp_path / "a.db")
    export = tmp_path / "a.jsonl"
    memproc("export", "--db", str(tmp_path / "a.db"), "--scope", SCOPE, str(export), check=True)
    lines = [orjson.loads(line) for line in export.read_bytes().splitlines()]
    for record in lines:
        if record.get("type") == "memory":
            del record["valid_from"], record["valid_until"]
    body = b"".join(orjson.dumps(record) + b"\n" for record in lines[:-1])
    trailer = {**lines[-1], "sha256": hashlib.sha256(body).hexdigest()}
    older = tmp_path / "older.jsonl"
    older.write_bytes(body + orjson.dumps(trailer) + b"\n")
    memproc("import", "--db", str(tmp_path / "b.db"), str(older), check=True)
    memory = get_memory(tmp_path / "b.db", first)
    assert memory["valid_until"] is None and memory["valid_from"] == memory["created_at"]


# -- as_of and the dense channel (real MiniLM) ---------------------------------------------


@pytest.fixture
def open_runtime(make_runtime: Callable[..., Runtime], tmp_path: Path, minilm_dir: Path) -> Any:
    models = tmp_path / "models"
    models.mkdir()
    (models / EMBEDDER).symlink_to(minilm_dir, target_is_directory=True)
    yield opener(make_runtime, models)
    settle()


def test_as_of_in_hybrid_search_serves_only_what_held_then(open_runtime: Any) -> None:
    runtime = open_runtime(defer_embedding=False)
    ctx = OpContext(runtime=runtime)
    old = remember(ctx, "The cat sleeps on the sofa.", kind="note", valid_from="2024-01-01")
    new = op(
        ctx, "memory.supersede", id=old, content="The cat sleeps in its basket.",
        valid_from="2024-06-01",
    )["successor"]  # fmt: skip
    later = remember(ctx, "A kitten naps on the couch.", kind="note")  # recorded now
    params = {"scope": SCOPE, "query": "where does the cat sleep", "mode": "hybrid"}
    then = call(ctx, "memory.search", {**params, "as_of": "2024-03-01", "explain": True})
    assert [hit["id"] for hit in then["results"]] == [old]
    assert then["degraded"] is not None and "the lexical channel only" in then["degraded"]
    filtered = {c["id"] for c in then["explanation"]["candidates"] if c["outcome"] == "filtered"}
    assert {new, later} <= filtered  # found by their meaning, but they did not hold then
    now = call(ctx, "memory.search", params)
    assert {hit["id"] for hit in now["results"]} == {new, later}
    assert now["degraded"] is None
