"""PostgreSQL twins of store/procedure_log.py: episodes and the append-only audit log.

The SQL is SQLite's with PostgreSQL's placeholders; the audit log's triggers (migrations.py)
refuse UPDATE, DELETE and TRUNCATE here as SQLite's refuse UPDATE and DELETE.
"""

from __future__ import annotations

from typing import Any

import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store.postgres.connection import PgConnection
from memproc.store.procedure_log import _ENTRY_COLUMNS, AuditEntry, NewEpisode, _entry


def insert_episode(conn: PgConnection, new: NewEpisode) -> str:
    episode_id = uuid7()
    conn.execute(
        "INSERT INTO episodes (id, scope, procedure_id, version_id, outcome, failed_at_step, "
        "notes, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (
            episode_id,
            new.scope,
            new.procedure_id,
            new.version_id,
            new.outcome,
            new.failed_at_step,
            new.notes,
            now_rfc3339(),
        ),
    )
    if new.procedure_id is not None:
        column = "success_count" if new.outcome == "success" else "failure_count"
        conn.execute(
            f"UPDATE procedures SET {column} = {column} + 1 WHERE id = %s", (new.procedure_id,)
        )
    return episode_id


def episode_exists(conn: PgConnection, scope: str, episode_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM episodes WHERE scope = %s AND id = %s", (scope, episode_id)
    ).fetchone()
    return row is not None


def append(
    conn: PgConnection,
    scope: str,
    procedure_id: str,
    version_id: str | None,
    event: str,
    *,
    actor: str | None = None,
    reason: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    conn.execute(
        "INSERT INTO procedure_audit (scope, procedure_id, version_id, event, actor, reason, "
        "detail, at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
        (
            scope,
            procedure_id,
            version_id,
            event,
            actor,
            reason,
            orjson.dumps(detail or {}).decode(),
            now_rfc3339(),
        ),
    )


def entries(
    conn: PgConnection, scope: str, procedure_id: str | None, after_seq: int, limit: int
) -> list[AuditEntry]:
    rows = conn.execute(
        f"SELECT {_ENTRY_COLUMNS} "
        "FROM procedure_audit WHERE scope = %(scope)s AND seq > %(after)s "
        "AND (%(procedure)s::text IS NULL OR procedure_id = %(procedure)s) "
        "ORDER BY seq LIMIT %(limit)s",
        {"scope": scope, "after": after_seq, "procedure": procedure_id, "limit": limit},
    )
    return [_entry(row) for row in rows]
