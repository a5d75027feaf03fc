"""The citation index: which record rests on which, across memories, evidence and procedures.

References are typed strings (``memory:<id>``, ``evidence:<id>``, ``procedure:<id>``) so one
table serves every family, and the impact of a memory leaving `active` is one indexed lookup.
"""

from __future__ import annotations

from collections.abc import Iterable

import apsw

from memproc.store.routing import routed


@routed
def add(conn: apsw.Connection, scope: str, citing: str, cited: Iterable[str]) -> None:
    """Record that `citing` rests on each of `cited` (repeats are ignored)."""
    conn.executemany(
        "INSERT OR IGNORE INTO citations (scope, citing, cited) VALUES (?, ?, ?)",
        [(scope, citing, ref) for ref in dict.fromkeys(cited)],
    )


@routed
def citing(conn: apsw.Connection, scope: str, cited: str) -> list[str]:
    """Every reference in `scope` that cites `cited`, in a stable order."""
    rows = conn.execute(
        "SELECT citing FROM citations WHERE scope = ? AND cited = ? ORDER BY citing",
        (scope, cited),
    )
    return [row[0] for row in rows]


@routed
def cited_by(conn: apsw.Connection, scope: str, citing_ref: str) -> list[str]:
    """Every reference that `citing_ref` cites."""
    rows = conn.execute(
        "SELECT cited FROM citations WHERE scope = ? AND citing = ? ORDER BY cited",
        (scope, citing_ref),
    )
    return [row[0] for row in rows]


@routed
def remove_citing(conn: apsw.Connection, scope: str, citing_ref: str) -> None:
    """Forget what `citing_ref` cites (used when its record is purged)."""
    conn.execute("DELETE FROM citations WHERE scope = ? AND citing = ?", (scope, citing_ref))
