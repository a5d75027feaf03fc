"""PostgreSQL twins of store/procedures.py: the same records, in the same order, by other SQL.

The SELECT list, the join and the row decoder are the SQLite module's own (one source for the
record). What differs, and why:

- Lists are bound as arrays (`= ANY (%s)`) where SQLite reads them from `json_each`.
- Text orders are `COLLATE "C"`: SQLite compares text byte by byte, and a server's default
  collation may not.
- FTS5's `procedure_fts` follows `procedure_versions` by trigger; here `insert_version` sets
  the row's `lex` from its search text itself (its tokens are prepared in Python, lexical.py,
  which a trigger cannot call), and `search_lexical` computes FTS5's bm25 over it.
- `INSERT OR IGNORE` / `INSERT OR REPLACE` are `ON CONFLICT DO NOTHING` / `DO UPDATE`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store.postgres import lexical
from memproc.store.postgres.connection import PgConnection
from memproc.store.procedures import _FROM, _VERSION_COLUMNS, NewVersion, VersionRecord, _record
from memproc.wire.vocabulary import VersionStatus

# The corpus of `lexical_totals` / `lexical_terms` that counts procedure versions.
CORPUS = "procedures"


def _one(conn: PgConnection, where: str, params: Sequence[Any]) -> VersionRecord | None:
    row = conn.execute(f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE {where}", params).fetchone()
    return None if row is None else _record(row)


# -- procedures and versions -----------------------------------------------------------------


def find_id_by_name(conn: PgConnection, scope: str, name: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM procedures WHERE scope = %s AND name = %s", (scope, name)
    ).fetchone()
    return None if row is None else str(row[0])


def exists(conn: PgConnection, scope: str, procedure_id: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM procedures WHERE scope = %s AND id = %s", (scope, procedure_id)
    ).fetchone()
    return row is not None


def insert_procedure(conn: PgConnection, scope: str, name: str) -> str:
    procedure_id = uuid7()
    now = now_rfc3339()
    conn.execute(
        "INSERT INTO procedures (id, scope, name, created_at, updated_at) "
        "VALUES (%s, %s, %s, %s, %s)",
        (procedure_id, scope, name, now, now),
    )
    return procedure_id


def insert_version(conn: PgConnection, new: NewVersion) -> VersionRecord:
    """As in SQLite, and the version's `lex` is set from its search text in the same
    statement (the one column of FTS5's procedure_fts, weight 1: class A)."""
    version_id = new.id or uuid7()
    now = now_rfc3339()
    row = conn.execute(
        "SELECT coalesce(max(version), 0) + 1 FROM procedure_versions WHERE procedure_id = %s",
        (new.procedure_id,),
    ).fetchone()
    assert row is not None
    conn.execute(
        "INSERT INTO procedure_versions (id, procedure_id, scope, version, parent_id, status, "
        "body, search_text, reason, findings, episode_id, created_at, updated_at, lex, "
        "lex_tokens) VALUES (%(id)s, %(procedure_id)s, %(scope)s, %(version)s, %(parent_id)s, "
        "%(status)s, %(body)s, %(search_text)s, %(reason)s, %(findings)s, %(episode_id)s, "
        f"%(now)s, %(now)s, {lexical.LEX_SQL}, %(lex_tokens)s)",
        {
            "id": version_id,
            "procedure_id": new.procedure_id,
            "scope": new.scope,
            "version": int(row[0]),
            "parent_id": new.parent_id,
            "status": new.status,
            "body": orjson.dumps(new.body).decode(),
            "search_text": new.search_text,
            "reason": new.reason,
            "findings": orjson.dumps(new.findings or []).decode(),
            "episode_id": new.episode_id,
            "now": now,
            **lexical.lex_params(lexical.lexical_text([new.search_text])),
        },
    )
    found = get_version(conn, new.scope, version_id)
    assert found is not None
    return found


def get_version(conn: PgConnection, scope: str, version_id: str) -> VersionRecord | None:
    return _one(conn, "v.scope = %s AND v.id = %s", (scope, version_id))


def current_version(conn: PgConnection, scope: str, procedure_id: str) -> VersionRecord | None:
    return _one(
        conn,
        "v.scope = %s AND v.procedure_id = %s AND v.status = 'current'",
        (scope, procedure_id),
    )


def set_status(conn: PgConnection, version_id: str, status: VersionStatus) -> None:
    conn.execute(
        "UPDATE procedure_versions SET status = %s, updated_at = %s WHERE id = %s",
        (status, now_rfc3339(), version_id),
    )


def set_findings(conn: PgConnection, version_id: str, findings: list[dict[str, Any]]) -> None:
    conn.execute(
        "UPDATE procedure_versions SET findings = %s, updated_at = %s WHERE id = %s",
        (orjson.dumps(findings).decode(), now_rfc3339(), version_id),
    )


def promote(conn: PgConnection, scope: str, version: VersionRecord) -> None:
    """Retire first, as in SQLite: the one-current unique index is checked per statement."""
    conn.execute(
        "UPDATE procedure_versions SET status = 'retired', updated_at = %s "
        "WHERE procedure_id = %s AND status = 'current' AND id != %s",
        (now_rfc3339(), version.procedure_id, version.id),
    )
    set_status(conn, version.id, "current")
    conn.execute(
        "UPDATE procedures SET updated_at = %s WHERE id = %s",
        (now_rfc3339(), version.procedure_id),
    )


def current_procedures(conn: PgConnection, scope: str) -> list[VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = %s AND v.status = 'current' "
        "ORDER BY p.seq",
        (scope,),
    )
    return [_record(row) for row in rows]


def current_by_ids(
    conn: PgConnection, scope: str, procedure_ids: Iterable[str]
) -> list[VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = %s AND v.status = 'current' "
        "AND v.procedure_id = ANY (%s) ORDER BY p.seq",
        (scope, sorted(set(procedure_ids))),
    )
    return [_record(row) for row in rows]


def current_by_seqs(conn: PgConnection, seqs: Sequence[int]) -> dict[int, VersionRecord]:
    """Keyed in seq order: the order SQLite reads its `IN (json_each)` probe in."""
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.status = 'current' "
        "AND v.seq = ANY (%s::bigint[]) ORDER BY v.seq",
        (list(seqs),),
    )
    return {record.seq: record for record in map(_record, rows)}


def list_current_page(
    conn: PgConnection, scope: str, before_seq: int | None, limit: int
) -> list[VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = %(scope)s "
        "AND v.status = 'current' AND (%(before)s::bigint IS NULL OR p.seq < %(before)s) "
        "ORDER BY p.seq DESC LIMIT %(limit)s",
        {"scope": scope, "before": before_seq, "limit": limit},
    )
    return [_record(row) for row in rows]


def procedure_seq(conn: PgConnection, procedure_id: str) -> int:
    row = conn.execute("SELECT seq FROM procedures WHERE id = %s", (procedure_id,)).fetchone()
    assert row is not None
    return int(row[0])


def quarantined(conn: PgConnection, scope: str, limit: int) -> list[VersionRecord]:
    rows = conn.execute(
        f"SELECT {_VERSION_COLUMNS} {_FROM} WHERE v.scope = %s AND v.status = 'quarantined' "
        "ORDER BY v.seq LIMIT %s",
        (scope, limit),
    )
    return [_record(row) for row in rows]


# -- the gate's candidate index ----------------------------------------------------------------


def replace_keys(conn: PgConnection, scope: str, procedure_id: str, keys: Iterable[str]) -> None:
    conn.execute("DELETE FROM procedure_keys WHERE procedure_id = %s", (procedure_id,))
    conn.executemany(
        "INSERT INTO procedure_keys (scope, key, procedure_id) VALUES (%s, %s, %s) "
        "ON CONFLICT DO NOTHING",
        [(scope, key, procedure_id) for key in sorted(set(keys))],
    )


def candidate_ids(conn: PgConnection, scope: str, keys: Iterable[str]) -> list[str]:
    """Sorted byte by byte (`COLLATE "C"`), as SQLite sorts text."""
    rows = conn.execute(
        'SELECT DISTINCT procedure_id COLLATE "C" AS procedure_id FROM procedure_keys '
        "WHERE scope = %s AND key = ANY (%s) ORDER BY 1",
        (scope, sorted(set(keys))),
    )
    return [row[0] for row in rows]


# -- search -------------------------------------------------------------------------------------


def search_lexical(
    conn: PgConnection, scope: str, match: str, limit: int
) -> list[tuple[int, float]]:
    """(version seq, bm25) of current versions matching, best first: FTS5's bm25 over every
    version (lexical.py), as SQLite's procedure_fts indexes every version, not only current
    ones; equal scores by seq, the order FTS5 yields its matches in."""
    lexemes = lexical.query_lexemes(conn, match)
    if not lexemes:
        return []
    rows = conn.execute(
        f"WITH {lexical.query_terms_sql(CORPUS)}, {lexical.ranked_sql(CORPUS)} "
        "SELECT v.seq, r.score FROM ranked AS r JOIN procedure_versions AS v ON v.seq = r.seq "
        "WHERE v.scope = %(scope)s AND v.status = 'current' "
        "ORDER BY r.score, v.seq LIMIT %(limit)s",
        {**lexical.query_params(lexemes), "scope": scope, "limit": limit},
    )
    return [(int(seq), float(score)) for seq, score in rows]


def vectors(conn: PgConnection, fingerprint: str, seqs: Sequence[int]) -> dict[int, bytes]:
    rows = conn.execute(
        "SELECT version_seq, vector FROM procedure_vectors WHERE fingerprint = %s "
        "AND version_seq = ANY (%s::bigint[]) ORDER BY version_seq",
        (fingerprint, list(seqs)),
    )
    return {int(seq): bytes(vector) for seq, vector in rows}


def put_vector(conn: PgConnection, seq: int, fingerprint: str, vector: bytes) -> None:
    """SQLite's INSERT OR REPLACE: the vector of a (version, fingerprint) is replaced."""
    conn.execute(
        "INSERT INTO procedure_vectors (version_seq, fingerprint, vector) VALUES (%s, %s, %s) "
        "ON CONFLICT (version_seq, fingerprint) DO UPDATE SET vector = excluded.vector",
        (seq, fingerprint, vector),
    )


# -- entity aliases -------------------------------------------------------------------------------


def add_aliases(conn: PgConnection, scope: str, name: str, aliases: Iterable[str]) -> None:
    now = now_rfc3339()
    conn.executemany(
        "INSERT INTO entity_aliases (scope, name, alias, created_at) VALUES (%s, %s, %s, %s) "
        "ON CONFLICT DO NOTHING",
        [(scope, name, alias, now) for alias in sorted(set(aliases)) if alias != name],
    )


def aliases(conn: PgConnection, scope: str) -> dict[str, set[str]]:
    """Names in byte order (`COLLATE "C"`), as SQLite sorts text."""
    found: dict[str, set[str]] = {}
    rows = conn.execute(
        "SELECT name, alias FROM entity_aliases WHERE scope = %s "
        'ORDER BY name COLLATE "C", alias COLLATE "C"',
        (scope,),
    )
    for name, alias in rows:
        found.setdefault(name, set()).add(alias)
    return found
