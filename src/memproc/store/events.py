"""SQL for the state-change log: every move of a memory between states, with time, reason
and source, appended and never rewritten (only a purge erases a memory's entries)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import Status


class EventRow(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A row of `memory_events`: the fields are its columns, in order."""

    memory_seq: int
    at: str
    action: str
    from_status: Status | None  # None for the first entry (`remember`)
    to_status: Status
    reason: str | None
    source: dict[str, Any]
    related: str | None  # the successor's id for a supersede


_row = RowDecoder(EventRow, json=("source",))
_COLUMNS = _row.columns()


@routed
def record(
    conn: apsw.Connection,
    memory_seq: int,
    action: str,
    from_status: Status | None,
    to_status: Status,
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


@routed
def list_all(conn: apsw.Connection, memory_seq: int) -> list[EventRow]:
    """Oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_events WHERE memory_seq = ? ORDER BY id", (memory_seq,)
    )
    return [_row(row) for row in rows]


@routed
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


@routed
def delete_all(conn: apsw.Connection, memory_seq: int) -> None:
    """A purge erases the log too: its reasons may quote what was purged."""
    conn.execute("DELETE FROM memory_events WHERE memory_seq = ?", (memory_seq,))
