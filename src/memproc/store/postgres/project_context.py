"""PostgreSQL twin of store/project_context.py: the live memories of one kind, in the order
`context.get` wants them.

The statuses are bound as a text array (`= ANY(...)`), where SQLite reads a JSON array with
json_each, and the validity window's RFC 3339 bounds are compared byte by byte
(`COLLATE "C"`), as SQLite compares text, whatever the server's default collation.
"""

from __future__ import annotations

from memproc.store import validity
from memproc.store.postgres.connection import PgConnection
from memproc.store.project_context import Order
from memproc.store.records import MEMORY_ROW, SEARCHABLE_STATUSES, MemoryRecord
from memproc.wire.vocabulary import Status

_ORDER_BY: dict[str, str] = {"recent": "seq DESC", "weighty": "importance DESC, seq DESC"}
_COLUMNS = MEMORY_ROW.columns()
_WINDOW_HOLDS = (
    '(valid_from IS NULL OR valid_from COLLATE "C" <= %(now)s) '
    'AND (valid_until IS NULL OR valid_until COLLATE "C" > %(now)s)'
)
_LIVE_OF_KIND = (
    "FROM memories WHERE scope = %(scope)s AND kind = %(kind)s "
    f"AND status = ANY (%(statuses)s::text[]) AND {_WINDOW_HOLDS}"
)


def live_of_kind(
    conn: PgConnection, scope: str, kind: str, order: Order, limit: int, now: str
) -> list[MemoryRecord]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} {_LIVE_OF_KIND} ORDER BY {_ORDER_BY[order]} LIMIT %(limit)s",
        {
            "scope": scope,
            "kind": kind,
            "statuses": list(SEARCHABLE_STATUSES),
            "now": now,
            "limit": limit,
        },
    ).fetchall()
    return [MEMORY_ROW(row) for row in rows]


def count_live_of_kind(conn: PgConnection, scope: str, kind: str, now: str) -> int:
    row = conn.execute(
        f"SELECT count(*) {_LIVE_OF_KIND}",
        {"scope": scope, "kind": kind, "statuses": list(SEARCHABLE_STATUSES), "now": now},
    ).fetchone()
    return int(row[0])


def held_of_kind_at(
    conn: PgConnection, scope: str, kind: str, order: Order, limit: int, as_of: str
) -> tuple[list[tuple[MemoryRecord, Status]], int]:
    """As on SQLite: validity's routed query (its twin) does the work."""
    order_by = ", ".join(f"m.{term}" for term in _ORDER_BY[order].split(", "))
    return validity.of_kind_at(conn, scope, kind, order_by, limit, as_of)
