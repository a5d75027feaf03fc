"""SQL for evidence records. Rows are written once and never updated.

The store keeps the payload as the exact text it was given and hands it back as text: checking
the hash and decoding the JSON is the caller's job, so a row damaged on disk still comes back
as a row (to be reported) instead of failing inside the store.
"""

from __future__ import annotations

import apsw
import msgspec

from memproc.clock import now_rfc3339
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import Status


class EvidenceRow(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A row of `evidence`: the fields are its columns, in order."""

    seq: int
    scope: str
    evidence_id: str
    claim: str
    session: str | None
    payload: str
    sha256: str
    recorded_at: str


class NewEvidence(msgspec.Struct, frozen=True, kw_only=True):
    scope: str
    evidence_id: str
    claim: str
    session: str | None
    payload: str
    sha256: str


_row = RowDecoder(EvidenceRow)
_COLUMNS = _row.columns()


@routed
def insert(conn: apsw.Connection, new: NewEvidence) -> EvidenceRow:
    recorded_at = now_rfc3339()
    conn.execute(
        "INSERT INTO evidence (scope, evidence_id, claim, session, payload, sha256, recorded_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?)",
        (new.scope, new.evidence_id, new.claim, new.session, new.payload, new.sha256, recorded_at),
    )
    return EvidenceRow(
        seq=conn.last_insert_rowid(),
        scope=new.scope,
        evidence_id=new.evidence_id,
        claim=new.claim,
        session=new.session,
        payload=new.payload,
        sha256=new.sha256,
        recorded_at=recorded_at,
    )


@routed
def get(conn: apsw.Connection, scope: str, evidence_id: str) -> EvidenceRow | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM evidence WHERE scope = ? AND evidence_id = ?",
        (scope, evidence_id),
    ).fetchone()
    return None if row is None else _row(row)


@routed
def list_page(
    conn: apsw.Connection,
    scope: str,
    *,
    claim: str | None,
    session: str | None,
    before_seq: int | None,
    limit: int,
) -> list[EvidenceRow]:
    """Newest first; keyset pagination on `seq`."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM evidence WHERE scope = :scope "
        "AND (:claim IS NULL OR claim = :claim) "
        "AND (:session IS NULL OR session = :session) "
        "AND (:before IS NULL OR seq < :before) "
        "ORDER BY seq DESC LIMIT :limit",
        {
            "scope": scope,
            "claim": claim,
            "session": session,
            "before": before_seq,
            "limit": limit,
        },
    ).fetchall()
    return [_row(row) for row in rows]


@routed
def count(conn: apsw.Connection, scope: str) -> int:
    return int(conn.execute("SELECT count(*) FROM evidence WHERE scope = ?", (scope,)).get)


class _MemoryStatus(msgspec.Struct, frozen=True, array_like=True):
    status: Status


_memory_status = RowDecoder(_MemoryStatus)


@routed
def memory_status(conn: apsw.Connection, scope: str, memory_id: str) -> Status | None:
    """The status of a memory an evidence record rests on; only the status, so a purged
    tombstone (which has no content) is read the same way as any other row."""
    row = conn.execute(
        "SELECT status FROM memories WHERE scope = ? AND id = ?", (scope, memory_id)
    ).fetchone()
    return None if row is None else _memory_status(row).status
