"""SQL for checkpoints: an append-only list of revisions per scope and task.

A task's current checkpoint is its highest revision, unless that revision is a clear. Nothing
is updated in place, which is what keeps every earlier revision readable.
"""

from __future__ import annotations

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder

# Rows that are the newest revision of their task.
_NEWEST = (
    "revision = (SELECT max(revision) FROM checkpoints AS n "
    "WHERE n.scope = checkpoints.scope AND n.task = checkpoints.task)"
)


class CheckpointRow(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A row of `checkpoints`: the fields are its columns, in order."""

    seq: int
    scope: str
    task: str
    revision: int
    cleared: bool
    summary: str
    decisions: list[str]
    next_steps: list[str]
    blockers: list[str]
    files: list[str]
    saved_at: str


class CheckpointContent(msgspec.Struct, frozen=True, kw_only=True):
    summary: str
    decisions: list[str]
    next_steps: list[str]
    blockers: list[str]
    files: list[str]


CLEARED = CheckpointContent(summary="", decisions=[], next_steps=[], blockers=[], files=[])


# SQLite has no booleans: `cleared` is stored as 0 or 1, which only msgspec's lax mode reads
# as a bool. The table is STRICT, so no other column's type is loosened in practice.
_row = RowDecoder(
    CheckpointRow, json=("decisions", "next_steps", "blockers", "files"), strict=False
)
_COLUMNS = _row.columns()


@routed
def newest(conn: apsw.Connection, scope: str, task: str) -> CheckpointRow | None:
    """The task's highest revision, a clear included."""
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE scope = ? AND task = ? "
        "ORDER BY revision DESC LIMIT 1",
        (scope, task),
    ).fetchone()
    return None if row is None else _row(row)


@routed
def revision(conn: apsw.Connection, scope: str, task: str, number: int) -> CheckpointRow | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE scope = ? AND task = ? AND revision = ?",
        (scope, task, number),
    ).fetchone()
    return None if row is None else _row(row)


@routed
def append(
    conn: apsw.Connection,
    scope: str,
    task: str,
    number: int,
    content: CheckpointContent,
    *,
    cleared: bool = False,
) -> CheckpointRow:
    """Add revision `number` of the task (the caller has checked it is the next one)."""
    saved_at = now_rfc3339()
    conn.execute(
        "INSERT INTO checkpoints (scope, task, revision, cleared, summary, decisions, "
        "next_steps, blockers, files, saved_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
    )
    return CheckpointRow(
        seq=conn.last_insert_rowid(),
        scope=scope,
        task=task,
        revision=number,
        cleared=cleared,
        saved_at=saved_at,
        **msgspec.structs.asdict(content),
    )


@routed
def list_current(
    conn: apsw.Connection, scope: str, *, before_seq: int | None, limit: int
) -> list[CheckpointRow]:
    """Every task's current checkpoint (cleared ones left out), most recently saved first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM checkpoints WHERE scope = :scope AND {_NEWEST} "
        "AND cleared = 0 AND (:before IS NULL OR seq < :before) "
        "ORDER BY seq DESC LIMIT :limit",
        {"scope": scope, "before": before_seq, "limit": limit},
    ).fetchall()
    return [_row(row) for row in rows]


@routed
def count_current(conn: apsw.Connection, scope: str) -> int:
    return int(
        conn.execute(
            f"SELECT count(*) FROM checkpoints WHERE scope = ? AND {_NEWEST} AND cleared = 0",
            (scope,),
        ).get
    )
