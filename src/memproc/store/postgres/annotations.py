"""PostgreSQL twin of store/annotations.py: what a read adds to a memory from outside its row
(the refs it cites, which of them are no longer active, the challenge it is under).

The page's (scope, citing) pairs are bound as two text arrays unnested side by side, where
SQLite reads one JSON array with json_each; the order is byte order (`COLLATE "C"`), as
SQLite's.
"""

from __future__ import annotations

from collections.abc import Sequence

from memproc.store import events
from memproc.store.annotations import MEMORY_REF, Annotation, memory_ref
from memproc.store.annotations import _Citation as Citation
from memproc.store.annotations import _citation as citation_row
from memproc.store.postgres.connection import PgConnection
from memproc.store.records import MemoryRecord


def annotate(conn: PgConnection, records: Sequence[MemoryRecord]) -> dict[int, Annotation]:
    found = {record.seq: Annotation() for record in records}
    by_ref = {(record.scope, memory_ref(record.id)): record.seq for record in records}
    for citation in _citations_with_status(conn, list(by_ref)):
        annotation = found[by_ref[(citation.scope, citation.citing)]]
        annotation.refs.append(citation.cited)
        if citation.cited.startswith(MEMORY_REF) and citation.status != "active":
            annotation.rests_on_inactive.append((citation.cited, citation.status or "missing"))
    challenged = [record.seq for record in records if record.status == "challenged"]
    if challenged:
        for seq, event in events.latest_challenges(conn, challenged).items():
            found[seq].challenge = event
    return found


def _citations_with_status(conn: PgConnection, citing: list[tuple[str, str]]) -> list[Citation]:
    if not citing:
        return []
    rows = conn.execute(
        "SELECT c.scope, c.citing, c.cited, m.status "
        "FROM unnest(%s::text[], %s::text[]) AS j (scope, citing) "
        "JOIN citations AS c ON c.scope = j.scope AND c.citing = j.citing "
        "LEFT JOIN memories AS m ON left(c.cited, 7) = 'memory:' "
        "AND m.scope = c.scope AND m.id = substr(c.cited, 8) "
        'ORDER BY c.scope COLLATE "C", c.citing COLLATE "C", c.cited COLLATE "C"',
        ([scope for scope, _ in citing], [ref for _, ref in citing]),
    )
    return [citation_row(row) for row in rows]
