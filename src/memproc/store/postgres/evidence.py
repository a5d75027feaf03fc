"""PostgreSQL twin of store/evidence.py: evidence records, written once and never updated.

Here the database holds the rule too: a trigger refuses any UPDATE of `evidence`
(migrations.py), so no client of the server can rewrite a record behind memproc's back. The
new row's `seq` comes back from `INSERT ... RETURNING`, and optional filters are cast so the
server knows their type when they are NULL.
"""

from __future__ import annotations

from memproc.clock import now_rfc3339
from memproc.store.evidence import EvidenceRow, NewEvidence
from memproc.store.evidence import _memory_status as memory_status_row
from memproc.store.evidence import _row as evidence_row
from memproc.store.postgres.connection import PgConnection
from memproc.wire.vocabulary import Status

_COLUMNS = evidence_row.columns()


def insert(conn: PgConnection, new: NewEvidence) -> EvidenceRow:
    recorded_at = now_rfc3339()
    seq = conn.execute(
        "INSERT INTO evidence (scope, evidence_id, claim, session, payload, sha256, recorded_at) "
        "VALUES (%s, %s, %s, %s, %s, %s, %s) RETURNING seq",
        (new.scope, new.evidence_id, new.claim, new.session, new.payload, new.sha256, recorded_at),
    ).fetchone()[0]
    return EvidenceRow(
        seq=int(seq),
        scope=new.scope,
        evidence_id=new.evidence_id,
        claim=new.claim,
        session=new.session,
        payload=new.payload,
        sha256=new.sha256,
        recorded_at=recorded_at,
    )


def get(conn: PgConnection, scope: str, evidence_id: str) -> EvidenceRow | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM evidence WHERE scope = %s AND evidence_id = %s",
        (scope, evidence_id),
    ).fetchone()
    return None if row is None else evidence_row(row)


def list_page(
    conn: PgConnection,
    scope: str,
    *,
    claim: str | None,
    session: str | None,
    before_seq: int | None,
    limit: int,
) -> list[EvidenceRow]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM evidence WHERE scope = %(scope)s "
        "AND (%(claim)s::text IS NULL OR claim = %(claim)s::text) "
        "AND (%(session)s::text IS NULL OR session = %(session)s::text) "
        "AND (%(before)s::bigint IS NULL OR seq < %(before)s::bigint) "
        "ORDER BY seq DESC LIMIT %(limit)s",
        {
            "scope": scope,
            "claim": claim,
            "session": session,
            "before": before_seq,
            "limit": limit,
        },
    ).fetchall()
    return [evidence_row(row) for row in rows]


def count(conn: PgConnection, scope: str) -> int:
    return int(
        conn.execute("SELECT count(*) FROM evidence WHERE scope = %s", (scope,)).fetchone()[0]
    )


def memory_status(conn: PgConnection, scope: str, memory_id: str) -> Status | None:
    row = conn.execute(
        "SELECT status FROM memories WHERE scope = %s AND id = %s", (scope, memory_id)
    ).fetchone()
    return None if row is None else memory_status_row(row).status
