"""PostgreSQL twin of store/events.py: the state-change log of memories, appended and never
rewritten (only a purge erases a memory's entries).

The memories asked about are bound as one bigint array (`= ANY(...)`), where SQLite reads a
JSON array with json_each.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from memproc.clock import now_rfc3339
from memproc.store.events import EventRow
from memproc.store.events import _row as event_row
from memproc.store.postgres.connection import PgConnection
from memproc.wire.vocabulary import Status

_COLUMNS = event_row.columns()


def record(
    conn: PgConnection,
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
        f"INSERT INTO memory_events ({_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
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


def list_all(conn: PgConnection, memory_seq: int) -> list[EventRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_events WHERE memory_seq = %s ORDER BY id", (memory_seq,)
    )
    return [event_row(row) for row in rows]


def latest_challenges(conn: PgConnection, memory_seqs: Sequence[int]) -> dict[int, EventRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_events WHERE id IN ("
        "SELECT max(id) FROM memory_events WHERE to_status = 'challenged' "
        "AND memory_seq = ANY (%s::bigint[]) GROUP BY memory_seq)",
        (list(memory_seqs),),
    )
    return {event.memory_seq: event for event in map(event_row, rows)}


def delete_all(conn: PgConnection, memory_seq: int) -> None:
    conn.execute("DELETE FROM memory_events WHERE memory_seq = %s", (memory_seq,))
