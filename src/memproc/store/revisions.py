"""SQL for memory revisions: every content a memory has had, the first one included.

The current content also lives in `memories` (FTS5 and the vectors index that row), but it is
written here first, so an edit never loses what was there before: nothing is overwritten.
"""

from __future__ import annotations

from typing import Any

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder


class RevisionRow(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A row of `memory_revisions`: the fields are the columns a read selects, in order."""

    revision: int
    content: str
    reason: str | None
    source: dict[str, Any]
    created_at: str


_row = RowDecoder(RevisionRow, json=("source",))
_COLUMNS = _row.columns()


@routed
def add(
    conn: apsw.Connection,
    memory_seq: int,
    revision: int,
    content: str,
    content_sha256: str,
    *,
    reason: str | None,
    source: dict[str, Any],
    at: str | None = None,
) -> None:
    conn.execute(
        "INSERT INTO memory_revisions (memory_seq, revision, content, content_sha256, reason, "
        "source, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (
            memory_seq,
            revision,
            content,
            content_sha256,
            reason,
            orjson.dumps(source).decode(),
            at or now_rfc3339(),
        ),
    )


@routed
def list_all(conn: apsw.Connection, memory_seq: int) -> list[RevisionRow]:
    """Oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_revisions WHERE memory_seq = ? ORDER BY revision",
        (memory_seq,),
    )
    return [_row(row) for row in rows]


@routed
def delete_all(conn: apsw.Connection, memory_seq: int) -> None:
    """Every revision of a memory goes (purge); secure_delete zeroes the freed bytes."""
    conn.execute("DELETE FROM memory_revisions WHERE memory_seq = ?", (memory_seq,))
