"""PostgreSQL twin of store/revisions.py: every content a memory has had, the first included.

The same SQL with PostgreSQL placeholders. A purge's DELETE frees the rows' space only for
VACUUM to reclaim (there is no secure_delete): see the README on purging.
"""

from __future__ import annotations

from typing import Any

import orjson

from memproc.clock import now_rfc3339
from memproc.store.postgres.connection import PgConnection
from memproc.store.revisions import RevisionRow
from memproc.store.revisions import _row as revision_row

_COLUMNS = revision_row.columns()


def add(
    conn: PgConnection,
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
        "source, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s)",
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


def list_all(conn: PgConnection, memory_seq: int) -> list[RevisionRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memory_revisions WHERE memory_seq = %s ORDER BY revision",
        (memory_seq,),
    )
    return [revision_row(row) for row in rows]


def delete_all(conn: PgConnection, memory_seq: int) -> None:
    conn.execute("DELETE FROM memory_revisions WHERE memory_seq = %s", (memory_seq,))
