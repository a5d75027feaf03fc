"""PostgreSQL twin of store/citations.py: the citation index across record families.

Lists are ordered with `COLLATE "C"`: SQLite compares text byte by byte, and a server whose
default collation follows a language (en_US, ...) would order references differently.
"""

from __future__ import annotations

from collections.abc import Iterable

from memproc.store.postgres.connection import PgConnection


def add(conn: PgConnection, scope: str, citing: str, cited: Iterable[str]) -> None:
    """Record that `citing` rests on each of `cited` (repeats are ignored: ON CONFLICT DO
    NOTHING is SQLite's INSERT OR IGNORE)."""
    conn.executemany(
        "INSERT INTO citations (scope, citing, cited) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
        [(scope, citing, ref) for ref in dict.fromkeys(cited)],
    )


def citing(conn: PgConnection, scope: str, cited: str) -> list[str]:
    rows = conn.execute(
        'SELECT citing FROM citations WHERE scope = %s AND cited = %s ORDER BY citing COLLATE "C"',
        (scope, cited),
    )
    return [row[0] for row in rows]


def cited_by(conn: PgConnection, scope: str, citing_ref: str) -> list[str]:
    rows = conn.execute(
        'SELECT cited FROM citations WHERE scope = %s AND citing = %s ORDER BY cited COLLATE "C"',
        (scope, citing_ref),
    )
    return [row[0] for row in rows]


def remove_citing(conn: PgConnection, scope: str, citing_ref: str) -> None:
    conn.execute("DELETE FROM citations WHERE scope = %s AND citing = %s", (scope, citing_ref))
