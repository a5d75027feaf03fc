"""SQL for procedures, their versions, the gate's candidate index and procedure vectors.

Functions take an open connection so the caller decides the transaction: an evolve reads the
current version, the candidates, writes the new version and promotes or quarantines it in one.
A procedure's body (steps, preconditions, outputs, entities...) is stored as JSON: the store
does not interpret it, the gate does.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import VersionStatus


class VersionRecord(msgspec.Struct, frozen=True, array_like=True):
    """A version joined with its procedure: the fields are the columns a read selects, in
    order, from `procedure_versions` (v) but for those `_FROM_PROCEDURE` names (p)."""

    seq: int
    id: str
    procedure_id: str
    scope: str
    name: str
    version: int
    parent_id: str | None
    status: VersionStatus
    body: dict[str, Any]
    reason: str | None
    findings: list[dict[str, Any]]
    episode_id: str | None
    created_at: str
    success_count: int
    failure_count: int


_FROM_PROCEDURE = frozenset({"name", "success_count", "failure_count"})
_record = RowDecoder(VersionRecord, json=("body", "findings"))
_VERSION_COLUMNS = ", ".join(
    f"{'p' if name in _FROM_PROCEDURE else 'v'}.{name}" for name in _record.fields
)
_FROM = "FROM procedure_versions AS v JOIN procedures AS p ON p.id = v.procedure_id"


def _one(conn: apsw.Connection, where: str, bindings: tuple[Any, ...]) -> VersionRecord | None:
    row = conn.execute(f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE {where}", bindings).fetchone()
    return None if row is None else _record(row)


# -- procedures and versions -----------------------------------------------------------------


@routed
def find_id_by_name(conn: apsw.Connection, scope: str, name: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM procedures WHERE scope = ? AND name = ?", (scope, name)
    ).fetchone()
    return None if row is None else row[0]


@routed
def exists(conn: apsw.Connection, scope: str, procedure_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM procedures WHERE scope = ? AND id = ?", (scope, procedure_id)
    ).fetchone()
    return row is not None


@routed
def insert_procedure(conn: apsw.Connection, scope: str, name: str) -> str:
    procedure_id = uuid7()
    now = now_rfc3339()
    conn.execute(
        "INSERT INTO procedures (id, scope, name, created_at, updated_at) VALUES (?, ?, ?, ?, ?)",
        (procedure_id, scope, name, now, now),
    )
    return procedure_id


@dataclass(frozen=True)
class NewVersion:
    procedure_id: str
    scope: str
    status: VersionStatus
    body: dict[str, Any]
    search_text: str
    parent_id: str | None = None
    reason: str | None = None
    findings: list[dict[str, Any]] | None = None
    episode_id: str | None = None
    id: str | None = None  # chosen by the caller when something must name it before the insert


@routed
def insert_version(conn: apsw.Connection, new: NewVersion) -> VersionRecord:
    """Insert the next version of a procedure; its number follows the highest so far."""
    version_id = new.id or uuid7()
    now = now_rfc3339()
    row = conn.execute(
        "SELECT coalesce(max(version), 0) + 1 FROM procedure_versions WHERE procedure_id = ?",
        (new.procedure_id,),
    ).fetchone()
    assert row is not None
    number = int(row[0])
    conn.execute(
        "INSERT INTO procedure_versions (id, procedure_id, scope, version, parent_id, status, "
        "body, search_text, reason, findings, episode_id, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            version_id,
            new.procedure_id,
            new.scope,
            number,
            new.parent_id,
            new.status,
            orjson.dumps(new.body).decode(),
            new.search_text,
            new.reason,
            orjson.dumps(new.findings or []).decode(),
            new.episode_id,
            now,
            now,
        ),
    )
    found = get_version(conn, new.scope, version_id)
    assert found is not None
    return found


@routed
def get_version(conn: apsw.Connection, scope: str, version_id: str) -> VersionRecord | None:
    return _one(conn, "v.scope = ? AND v.id = ?", (scope, version_id))


@routed
def current_version(conn: apsw.Connection, scope: str, procedure_id: str) -> VersionRecord | None:
    return _one(
        conn, "v.scope = ? AND v.procedure_id = ? AND v.status = 'current'", (scope, procedure_id)
    )


@routed
def set_status(conn: apsw.Connection, version_id: str, status: VersionStatus) -> None:
    conn.execute(
        "UPDATE procedure_versions SET status = ?, updated_at = ? WHERE id = ?",
        (status, now_rfc3339(), version_id),
    )


@routed
def set_findings(conn: apsw.Connection, version_id: str, findings: list[dict[str, Any]]) -> None:
    """Replace a quarantined revision's findings: what the judge's answers made of them."""
    conn.execute(
        "UPDATE procedure_versions SET findings = ?, updated_at = ? WHERE id = ?",
        (orjson.dumps(findings).decode(), now_rfc3339(), version_id),
    )


@routed
def promote(conn: apsw.Connection, scope: str, version: VersionRecord) -> None:
    """Make `version` current and retire the version that was: both inside the caller's
    transaction, retiring first so the one-current index never sees two."""
    conn.execute(
        "UPDATE procedure_versions SET status = 'retired', updated_at = ? "
        "WHERE procedure_id = ? AND status = 'current' AND id != ?",
        (now_rfc3339(), version.procedure_id, version.id),
    )
    set_status(conn, version.id, "current")
    conn.execute(
        "UPDATE procedures SET updated_at = ? WHERE id = ?", (now_rfc3339(), version.procedure_id)
    )


@routed
def current_procedures(conn: apsw.Connection, scope: str) -> list[VersionRecord]:
    """Every current procedure version of a scope, oldest procedure first (for context.get
    and for gates that compare against everything)."""
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = ? AND v.status = 'current' "
        "ORDER BY p.seq",
        (scope,),
    )
    return [_record(row) for row in rows]


@routed
def current_by_ids(
    conn: apsw.Connection, scope: str, procedure_ids: Iterable[str]
) -> list[VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = ? AND v.status = 'current' "
        "AND v.procedure_id IN (SELECT value FROM json_each(?)) ORDER BY p.seq",
        (scope, orjson.dumps(sorted(set(procedure_ids))).decode()),
    )
    return [_record(row) for row in rows]


@routed
def current_by_seqs(conn: apsw.Connection, seqs: Sequence[int]) -> dict[int, VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.status = 'current' "
        "AND v.seq IN (SELECT value FROM json_each(?))",
        (orjson.dumps(list(seqs)).decode(),),
    )
    return {record.seq: record for record in map(_record, rows)}


@routed
def list_current_page(
    conn: apsw.Connection, scope: str, before_seq: int | None, limit: int
) -> list[VersionRecord]:
    """Current versions, newest procedure first; keyset pagination on the procedure's seq."""
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS}, p.seq {_FROM} WHERE v.scope = :scope "
        "AND v.status = 'current' AND (:before IS NULL OR p.seq < :before) "
        "ORDER BY p.seq DESC LIMIT :limit",
        {"scope": scope, "before": before_seq, "limit": limit},
    ).fetchall()
    return [_record(row[:-1]) for row in rows]


@routed
def procedure_seq(conn: apsw.Connection, procedure_id: str) -> int:
    row = conn.execute("SELECT seq FROM procedures WHERE id = ?", (procedure_id,)).fetchone()
    assert row is not None
    return int(row[0])


@routed
def quarantined(conn: apsw.Connection, scope: str, limit: int) -> list[VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = ? AND v.status = 'quarantined' "
        "ORDER BY v.seq LIMIT ?",
        (scope, limit),
    )
    return [_record(row) for row in rows]


# -- the gate's candidate index ----------------------------------------------------------------


@routed
def replace_keys(conn: apsw.Connection, scope: str, procedure_id: str, keys: Iterable[str]) -> None:
    conn.execute("DELETE FROM procedure_keys WHERE procedure_id = ?", (procedure_id,))
    conn.executemany(
        "INSERT OR IGNORE INTO procedure_keys (scope, key, procedure_id) VALUES (?, ?, ?)",
        [(scope, key, procedure_id) for key in sorted(set(keys))],
    )


@routed
def candidate_ids(conn: apsw.Connection, scope: str, keys: Iterable[str]) -> list[str]:
    """Procedures filed under any of `keys`: those that may depend on a revision."""
    rows = conn.execute(
        "SELECT DISTINCT procedure_id FROM procedure_keys WHERE scope = ? "
        "AND key IN (SELECT value FROM json_each(?)) ORDER BY procedure_id",
        (scope, orjson.dumps(sorted(set(keys))).decode()),
    )
    return [row[0] for row in rows]


# -- search -------------------------------------------------------------------------------------


@routed
def search_lexical(
    conn: apsw.Connection, scope: str, match: str, limit: int
) -> list[tuple[int, float]]:
    """(version seq, bm25) of current versions matching, best first."""
    rows = conn.execute(
        "SELECT v.seq, bm25(procedure_fts) AS score FROM procedure_fts "
        "JOIN procedure_versions AS v ON v.seq = procedure_fts.rowid "
        "WHERE procedure_fts MATCH ? AND v.scope = ? AND v.status = 'current' "
        "ORDER BY score LIMIT ?",
        (match, scope, limit),
    )
    return [(int(seq), float(score)) for seq, score in rows]


@routed
def vectors(conn: apsw.Connection, fingerprint: str, seqs: Sequence[int]) -> dict[int, bytes]:
    rows = conn.execute(
        "SELECT version_seq, vector FROM procedure_vectors WHERE fingerprint = ? "
        "AND version_seq IN (SELECT value FROM json_each(?))",
        (fingerprint, orjson.dumps(list(seqs)).decode()),
    )
    return {int(seq): bytes(vector) for seq, vector in rows}


@routed
def put_vector(conn: apsw.Connection, seq: int, fingerprint: str, vector: bytes) -> None:
    conn.execute(
        "INSERT OR REPLACE INTO procedure_vectors (version_seq, fingerprint, vector) "
        "VALUES (?, ?, ?)",
        (seq, fingerprint, vector),
    )


# -- entity aliases -------------------------------------------------------------------------------


@routed
def add_aliases(conn: apsw.Connection, scope: str, name: str, aliases: Iterable[str]) -> None:
    """File `aliases` as other names of `name` in `scope`; repeating one changes nothing."""
    now = now_rfc3339()
    conn.executemany(
        "INSERT OR IGNORE INTO entity_aliases (scope, name, alias, created_at) VALUES (?, ?, ?, ?)",
        [(scope, name, alias, now) for alias in sorted(set(aliases)) if alias != name],
    )


@routed
def aliases(conn: apsw.Connection, scope: str) -> dict[str, set[str]]:
    """Every entity of `scope` that has aliases -> its aliases."""
    found: dict[str, set[str]] = {}
    rows = conn.execute(
        "SELECT name, alias FROM entity_aliases WHERE scope = ? ORDER BY name, alias", (scope,)
    )
    for name, alias in rows:
        found.setdefault(name, set()).add(alias)
    return found
