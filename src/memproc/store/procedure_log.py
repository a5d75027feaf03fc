"""SQL for what happens to procedures: episodes (runs and their outcome) and the audit log.

The audit log is append-only: triggers refuse UPDATE and DELETE on it, so a review can trust
that what it reads is what happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import EpisodeOutcome


@dataclass(frozen=True)
class NewEpisode:
    scope: str
    procedure_id: str | None
    version_id: str | None
    outcome: EpisodeOutcome
    failed_at_step: int | None
    notes: str


@routed
def insert_episode(conn: apsw.Connection, new: NewEpisode) -> str:
    """Record an episode and count its outcome on the procedure."""
    episode_id = uuid7()
    conn.execute(
        "INSERT INTO episodes (id, scope, procedure_id, version_id, outcome, failed_at_step, "
        "notes, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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
            f"UPDATE procedures SET {column} = {column} + 1 WHERE id = ?", (new.procedure_id,)
        )
    return episode_id


@routed
def episode_exists(conn: apsw.Connection, scope: str, episode_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM episodes WHERE scope = ? AND id = ?", (scope, episode_id)
    ).fetchone()
    return row is not None


class AuditEntry(msgspec.Struct, frozen=True, array_like=True):
    """A row of `procedure_audit`: the fields are the columns a read selects, in order."""

    seq: int
    procedure_id: str
    version_id: str | None
    event: str
    actor: str | None
    reason: str | None
    detail: dict[str, Any]
    at: str


_entry = RowDecoder(AuditEntry, json=("detail",))
_ENTRY_COLUMNS = _entry.columns()


@routed
def append(
    conn: apsw.Connection,
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
        "detail, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
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


@routed
def entries(
    conn: apsw.Connection, scope: str, procedure_id: str | None, after_seq: int, limit: int
) -> list[AuditEntry]:
    """Oldest first from `after_seq`, optionally for one procedure."""
    rows = conn.execute(
        f"SELECT {_ENTRY_COLUMNS} "
        "FROM procedure_audit WHERE scope = :scope AND seq > :after "
        "AND (:procedure IS NULL OR procedure_id = :procedure) ORDER BY seq LIMIT :limit",
        {"scope": scope, "after": after_seq, "procedure": procedure_id, "limit": limit},
    )
    return [_entry(row) for row in rows]
