"""Memories for the record-family tests on either store.

`store/postgres/memories.py` is being written beside these tests: until it lands, a memory is
put into a PostgreSQL database here the way `memories.insert` puts it into SQLite (the row, its
first revision, its first log entry), and read back or moved between states with the same
columns. On SQLite, and on PostgreSQL once the twin exists, the store's own functions run.
"""

from __future__ import annotations

from typing import Any

import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store import NewMemory, events, revisions
from memproc.store import memories as memory_sql
from memproc.store.memories import content_hash
from memproc.store.records import MEMORY_ROW, MemoryRecord

# What the routing raises while store/postgres/memories.py (or the function) does not exist.
_NO_TWIN_YET = (ModuleNotFoundError, NotImplementedError)


def new_memory(content: str, *, scope: str = "proj", kind: str = "note", **extra: Any) -> NewMemory:
    fields: dict[str, Any] = {
        "scope": scope,
        "kind": kind,
        "content": content,
        "tags": [],
        "metadata": {},
        "source": {},
        "importance": 0.5,
        "client_token": None,
    }
    fields.update(extra)
    return NewMemory(**fields)


def insert(conn: Any, new: NewMemory) -> tuple[str, int]:
    try:
        return memory_sql.insert(conn, new)
    except _NO_TWIN_YET:
        return _insert_by_hand(conn, new)


def get(conn: Any, scope: str, memory_id: str) -> MemoryRecord | None:
    try:
        return memory_sql.get(conn, scope, memory_id)
    except _NO_TWIN_YET:
        row = conn.execute(
            f"SELECT {MEMORY_ROW.columns()} FROM memories WHERE scope = %s AND id = %s",
            (scope, memory_id),
        ).fetchone()
        return None if row is None else MEMORY_ROW(row)


def set_status(conn: Any, seq: int, status: str) -> None:
    try:
        memory_sql.set_status(conn, seq, status, None)
    except _NO_TWIN_YET:
        conn.execute("UPDATE memories SET status = %s WHERE seq = %s", (status, seq))


def _insert_by_hand(conn: Any, new: NewMemory) -> tuple[str, int]:
    memory_id, now = uuid7(), now_rfc3339()
    (seq,) = conn.execute(
        "INSERT INTO memories (id, scope, kind, content, content_sha256, tags, metadata, source, "
        "importance, status, client_token, created_at, updated_at, occurred_at, context, "
        "valid_from, valid_until, thread) VALUES "
        "(%s, %s, %s, %s, %s, %s, %s, %s, %s, 'active', %s, %s, %s, %s, %s, %s, %s, %s) "
        "RETURNING seq",
        (
            memory_id,
            new.scope,
            new.kind,
            new.content,
            content_hash(new.content),
            orjson.dumps(new.tags).decode(),
            orjson.dumps(new.metadata).decode(),
            orjson.dumps(new.source).decode(),
            new.importance,
            new.client_token,
            now,
            now,
            new.occurred_at,
            new.context,
            new.valid_from,
            new.valid_until,
            new.thread,
        ),
    ).fetchone()
    digest = content_hash(new.content)
    revisions.add(conn, seq, 1, new.content, digest, reason=None, source=new.source, at=now)
    events.record(conn, seq, "remember", None, "active", reason=None, source=new.source, at=now)
    return memory_id, int(seq)
