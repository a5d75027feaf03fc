"""SQL behind `context.get`: the live memories of one kind, in the order the context wants them.

Kept apart from `memories.py` (which owns writes and search) because these are the context's
own orderings; the row shape is the one `records.py` defines (`MEMORY_ROW`), so both stay in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import apsw
import orjson

from memproc.store import validity
from memproc.store.records import MEMORY_ROW, SEARCHABLE_STATUSES, MemoryRecord
from memproc.store.routing import routed
from memproc.wire.vocabulary import Status

# "recent": newest first. "weighty": most important first, then newest.
Order = Literal["recent", "weighty"]
_ORDER_BY: dict[str, str] = {"recent": "seq DESC", "weighty": "importance DESC, seq DESC"}
_COLUMNS = MEMORY_ROW.columns()


# A live memory's window holds at `now` (a window given at remember may start later or end
# earlier); its status already says the rest, for now (see `validity`).
_WINDOW_HOLDS = (
    "(valid_from IS NULL OR valid_from <= :now) AND (valid_until IS NULL OR valid_until > :now)"
)


@routed
def live_of_kind(
    conn: apsw.Connection, scope: str, kind: str, order: Order, limit: int, now: str
) -> list[MemoryRecord]:
    """Memories that may be served (active and challenged) of one kind, holding at `now`."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE scope = :scope AND kind = :kind "
        f"AND status IN (SELECT value FROM json_each(:statuses)) AND {_WINDOW_HOLDS} "
        f"ORDER BY {_ORDER_BY[order]} LIMIT :limit",
        {"scope": scope, "kind": kind, "statuses": _statuses(), "now": now, "limit": limit},
    ).fetchall()
    return [MEMORY_ROW(row) for row in rows]


@routed
def count_live_of_kind(conn: apsw.Connection, scope: str, kind: str, now: str) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM memories WHERE scope = :scope AND kind = :kind "
            f"AND status IN (SELECT value FROM json_each(:statuses)) AND {_WINDOW_HOLDS}",
            {"scope": scope, "kind": kind, "statuses": _statuses(), "now": now},
        ).get
    )


@routed
def held_of_kind_at(
    conn: apsw.Connection, scope: str, kind: str, order: Order, limit: int, as_of: str
) -> tuple[list[tuple[MemoryRecord, Status]], int]:
    """Memories of one kind that held true at `as_of`, each with its state then, in the
    context's order; and how many in all."""
    order_by = ", ".join(f"m.{term}" for term in _ORDER_BY[order].split(", "))
    return validity.of_kind_at(conn, scope, kind, order_by, limit, as_of)


def _statuses(statuses: Sequence[str] = SEARCHABLE_STATUSES) -> str:
    return orjson.dumps(list(statuses)).decode()
