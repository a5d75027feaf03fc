"""PostgreSQL twin of store/checkpoints.py: an append-only list of revisions per scope and task.

The same SQL but for two things: the new row's `seq` comes back from `INSERT ... RETURNING`
(there is no last_insert_rowid()), and an optional bound value is cast so the server knows its
type when it is NULL.
"""

from __future__ import annotations

import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.store.checkpoints import CheckpointContent, CheckpointRow
from memproc.store.checkpoints import _row as checkpoint_row
from memproc.store.postgres.connection import PgConnection

_COLUMNS = checkpoint_row.columns()
# Rows that are the newest revision of their task.
_NEWEST = (
    "revision = (SELECT max(revision) FROM checkpoints AS n "
    "WHERE n.scope = checkpoints.scope AND n.task = checkpoints.task)"
)


def newest(conn: PgConnection, scope: str, task: str) -> CheckpointRow | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE scope = %s AND task = %s "
        "ORDER BY revision DESC LIMIT 1",
        (scope, task),
    ).fetchone()
    return None if row is None else checkpoint_row(row)


def revision(conn: PgConnection, scope: str, task: str, number: int) -> CheckpointRow | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE scope = %s AND task = %s AND revision = %s",
        (scope, task, number),
    ).fetchone()
    return None if row is None else checkpoint_row(row)


def append(
    conn: PgConnection,
    scope: str,
    task: str,
    number: int,
    content: CheckpointContent,
    *,
    cleared: bool = False,
) -> CheckpointRow:
    saved_at = now_rfc3339()
    seq = conn.execute(
        "INSERT INTO checkpoints (scope, task, revision, cleared, summary, decisions, "
        "next_steps, blockers, files, saved_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) "
        "RETURNING seq",
        (
            scope,
            task,
            number,
            int(cleared),
            content.summary,
            orjson.dumps(content.decisions).decode(),
            orjson.dumps(content.next_steps).decode(),
            orjson.dumps(content.blockers).decode(),
            orjson.dumps(content.files).decode(),
            saved_at,
        ),
    ).fetchone()[0]
    return CheckpointRow(
        seq=int(seq),
        scope=scope,
        task=task,
        revision=number,
        cleared=cleared,
        saved_at=saved_at,
        **msgspec.structs.asdict(content),
    )


def list_current(
    conn: PgConnection, scope: str, *, before_seq: int | None, limit: int
) -> list[CheckpointRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE scope = %(scope)s AND {_NEWEST} "
        "AND cleared = 0 AND (%(before)s::bigint IS NULL OR seq < %(before)s::bigint) "
        "ORDER BY seq DESC LIMIT %(limit)s",
        {"scope": scope, "before": before_seq, "limit": limit},
    ).fetchall()
    return [checkpoint_row(row) for row in rows]


def count_current(conn: PgConnection, scope: str) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM checkpoints WHERE scope = %s AND {_NEWEST} AND cleared = 0",
        (scope,),
    ).fetchone()
    return int(row[0])
