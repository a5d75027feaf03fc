"""SQL behind `context.get`: the live memories of one kind, in the order the context wants them.

Kept apart from `memories.py` (which owns writes and search) because these are the context's
own orderings; the row shape is the one `records.py` defines (`MEMORY_ROW`), so both stay in step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import apsw
import orjson

from memproc.store.records import MEMORY_ROW, SEARCHABLE_STATUSES, MemoryRecord

# "recent": newest first. "weighty": most important first, then newest.
Order = Literal["recent", "weighty"]
_ORDER_BY: dict[str, str] = {"recent": "seq DESC", "weighty": "importance DESC, seq DESC"}
_COLUMNS = MEMORY_ROW.columns()


def live_of_kind(
    conn: apsw.Connection, scope: str, kind: str, order: Order, limit: int
) -> list[MemoryRecord]:
    """Memories that may be served (active and challenged) of one kind."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND kind = ? "
        "AND status IN (SELECT value FROM json_each(?)) "
        f"ORDER BY {_ORDER_BY[order]} LIMIT ?",
        (scope, kind, _statuses(), limit),
    ).fetchall()
    return [MEMORY_ROW(row) for row in rows]


def count_live_of_kind(conn: apsw.Connection, scope: str, kind: str) -> int:
    return int(
        conn.execute(
            "SELECT count(*) FROM memories WHERE scope = ? AND kind = ? "
            "AND status IN (SELECT value FROM json_each(?))",
            (scope, kind, _statuses()),
        ).get
    )


def _statuses(statuses: Sequence[str] = SEARCHABLE_STATUSES) -> str:
    return orjson.dumps(list(statuses)).decode()
