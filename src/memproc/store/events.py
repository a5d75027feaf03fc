"""SQL for the state-change log: every move of a memory between states, with time, reason
and source, appended and never rewritten (only a purge erases a memory's entries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339


class EventRow(msgspec.Struct, frozen=True, kw_only=True):
    memory_seq: int
    at: str
    action: str
    from_status: str | None
    to_status: str
    reason: str | None
    source: dict[str, Any]
    related: str | None  # the successor's id for a supersede


_COLUMNS = "memory_seq, at, action, from_status, to_status, reason, source, related"


def _row(row: Sequence[Any]) -> EventRow:
    seq, at, action, from_status, to_status, reason, source, related = row
    return EventRow(
        memory_seq=seq,
        at=at,
        action=action,
        from_status=from_status,
        to_status=to_status,
        reason=reason,
        source=orjson.loads(source),
        related=related,
    )


def record(
    conn: apsw.Connection,
    memory_seq: int,
    action: str,
    from_status: str | None,
    to_status: str,
    *,
    reason: str | None,
    source: dict[str, Any],
    related: str | None = None,
    at: str | None = None,
) -> None:
    conn.execute(
        f"INSERT INTO memory_events ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            memory_seq,
            at or now_rfc3339(),
            action,
            from_status,
            to_status,
            reason,
            orjson.dumps(source).decode(),
            related,
        ),
    )


def list_all(conn: apsw.Connection, memory_seq: int) -> list[EventRow]:
    """Oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_events WHERE memory_seq = ? ORDER BY id", (memory_seq,)
    )
    return [_row(row) for row in rows]


def latest_challenges(conn: apsw.Connection, memory_seqs: Sequence[int]) -> dict[int, EventRow]:
    """For each memory, its most recent move into `challenged` (the challenge it is under
    when its status is challenged)."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_events WHERE id IN ("
        "SELECT max(id) FROM memory_events WHERE to_status = 'challenged' "
        "AND memory_seq IN (SELECT value FROM json_each(?)) GROUP BY memory_seq)",
        (orjson.dumps(list(memory_seqs)).decode(),),
    )
    return {event.memory_seq: event for event in map(_row, rows)}


def delete_all(conn: apsw.Connection, memory_seq: int) -> None:
    """A purge erases the log too: its reasons may quote what was purged."""
    conn.execute("DELETE FROM memory_events WHERE memory_seq = ?", (memory_seq,))
