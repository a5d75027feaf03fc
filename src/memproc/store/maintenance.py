"""Finding and repairing drift between memories, their FTS rows and their vectors.

Drift should not happen (every change to a memory updates all three in one transaction), but
a database may have been edited by hand, restored from a partial copy, or written by a bug;
`memproc index verify` says what is wrong and `memproc index rebuild` puts it right.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import apsw
import orjson

from memproc.store.quoting import quote_identifier
from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.routing import routed
from memproc.store.vectors import (
    EmbedderRow,
    all_embedders,
    count_pending,
    journal,
    remove_memory_vectors,
)

_SEARCHABLE = orjson.dumps(SEARCHABLE_STATUSES).decode()
# Vector rows of a memory row that no longer exists (deleted by hand or restored without it):
# its embedding record went with it by cascade, its vectors did not, and they take dense slots.
_MEMORYLESS = (
    "FROM vector_rows AS r WHERE r.embedder_id = :id "
    "AND NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.seq = r.memory_seq)"
)


@dataclass
class EmbedderDrift:
    name: str
    fingerprint_id: int
    missing_or_stale: int  # searchable memories without current vectors
    inactive_with_vectors: int  # memories that should have lost their vectors
    orphan_vectors: int  # vec0 and vector_rows rows without each other; deleted memories' rows
    chunk_mismatches: int  # embedding records whose chunk count disagrees with the rows

    @property
    def clean(self) -> bool:
        return not (self.inactive_with_vectors or self.orphan_vectors or self.chunk_mismatches)


@dataclass
class IndexReport:
    memories: int
    memories_searchable: int
    fts_ok: bool
    fts_error: str | None
    embedders: list[EmbedderDrift] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        return self.fts_ok and all(e.clean for e in self.embedders)


@routed
def verify(conn: apsw.Connection) -> IndexReport:
    memories = int(conn.execute("SELECT count(*) FROM memories").get or 0)
    searchable = conn.execute(
        "SELECT count(*) FROM memories WHERE status IN (SELECT value FROM json_each(?))",
        (_SEARCHABLE,),
    ).get
    fts_ok, fts_error = _fts_integrity(conn)
    report = IndexReport(
        memories=memories,
        memories_searchable=int(searchable or 0),
        fts_ok=fts_ok,
        fts_error=fts_error,
    )
    report.embedders = [_embedder_drift(conn, row) for row in all_embedders(conn)]
    return report


def _fts_integrity(conn: apsw.Connection) -> tuple[bool, str | None]:
    """FTS5's own check compares the index with the content table (rank=1: content too)."""
    try:
        conn.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)")
    except apsw.CorruptError as exc:
        return False, str(exc)
    return True, None


def _embedder_drift(conn: apsw.Connection, row: EmbedderRow) -> EmbedderDrift:
    table = quote_identifier(row.table)
    inactive = conn.execute(
        "SELECT count(*) FROM memory_embeddings AS e JOIN memories AS m ON m.seq = e.memory_seq "
        "WHERE e.embedder_id = ? AND m.status NOT IN (SELECT value FROM json_each(?))",
        (row.id, _SEARCHABLE),
    ).get
    vec_rowids = {int(r) for (r,) in conn.execute(f"SELECT rowid FROM {table}")}
    listed = {
        int(r)
        for (r,) in conn.execute("SELECT rowid FROM vector_rows WHERE embedder_id = ?", (row.id,))
    }
    mismatched = conn.execute(
        "SELECT count(*) FROM memory_embeddings AS e WHERE e.embedder_id = :id AND e.chunks != "
        "(SELECT count(*) FROM vector_rows AS r WHERE r.memory_seq = e.memory_seq "
        "AND r.embedder_id = :id)",
        {"id": row.id},
    ).get
    memoryless = conn.execute(f"SELECT count(*) {_MEMORYLESS}", {"id": row.id}).get
    return EmbedderDrift(
        name=row.name,
        fingerprint_id=row.id,
        missing_or_stale=count_pending(conn, row),
        inactive_with_vectors=int(inactive or 0),
        orphan_vectors=len(vec_rowids ^ listed) + int(memoryless or 0),
        chunk_mismatches=int(mismatched or 0),
    )


@routed
def rebuild_fts(conn: apsw.Connection) -> None:
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')")


@routed
def drop_drifted_vectors(conn: apsw.Connection, row: EmbedderRow) -> int:
    """Delete every vector and record that verify would flag, so a backfill can redo them:
    inactive or edited memories' vectors, chunk-count mismatches, vectors of deleted memories,
    and orphan rows."""
    doomed = [
        int(seq)
        for (seq,) in conn.execute(
            "SELECT e.memory_seq FROM memory_embeddings AS e JOIN memories AS m "
            "ON m.seq = e.memory_seq WHERE e.embedder_id = :id AND (m.status NOT IN "
            "(SELECT value FROM json_each(:searchable)) "
            "OR e.content_sha256 != coalesce(m.index_sha256, m.content_sha256) "
            "OR e.chunks != (SELECT count(*) FROM vector_rows AS r "
            "WHERE r.memory_seq = e.memory_seq AND r.embedder_id = :id))",
            {"id": row.id, "searchable": _SEARCHABLE},
        )
    ]
    doomed += [
        int(seq)
        for (seq,) in conn.execute(f"SELECT DISTINCT memory_seq {_MEMORYLESS}", {"id": row.id})
    ]
    for seq in doomed:
        remove_memory_vectors(conn, row, seq)
    return len(doomed) + _drop_orphans(conn, row)


def _drop_orphans(conn: apsw.Connection, row: EmbedderRow) -> int:
    """vec0 rows no vector_rows entry lists, and entries whose vec0 row is gone."""
    table = quote_identifier(row.table)
    vec_rowids = {int(r) for (r,) in conn.execute(f"SELECT rowid FROM {table}")}
    listed = {
        int(r)
        for (r,) in conn.execute("SELECT rowid FROM vector_rows WHERE embedder_id = ?", (row.id,))
    }
    for rowid in vec_rowids - listed:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        journal(conn, row.id, rowid, added=False)
    for rowid in listed - vec_rowids:
        conn.execute("DELETE FROM vector_rows WHERE rowid = ?", (rowid,))
    return len(vec_rowids ^ listed)


@routed
def sqlite_vec_version(conn: apsw.Connection) -> str:
    """The loaded sqlite-vec extension's own version, for `memproc doctor`."""
    return str(conn.execute("SELECT vec_version()").get)
