"""PostgreSQL twin of store/vector_transfer.py's SQL: embedders, memory vectors and procedure
vectors read and written by id for `memproc migrate`.

Ids are ordered byte by byte (`COLLATE "C"`), as SQLite orders them, so both stores list a
store's vectors in the same order and their digests can be compared. Vectors are read in
pgvector's binary form (float32 bytes, as SQLite's vec0 holds them) through a server-side
cursor, so 100,000 memories' vectors are never held at once.
"""

from __future__ import annotations

from collections.abc import Iterator

from memproc.store import vectors
from memproc.store.postgres.connection import PgConnection
from memproc.store.quoting import quote_identifier
from memproc.store.vector_transfer import (
    EmbedderRecord,
    MemoryVectors,
    ProcedureVector,
    group_chunks,
)
from memproc.store.vectors import EmbedderRow

_CURSOR_ROWS = 4096


def embedder_records(conn: PgConnection) -> list[tuple[EmbedderRow, EmbedderRecord]]:
    rows = conn.execute(
        "SELECT id, name, fingerprint, dims, created_at FROM embedders "
        'ORDER BY fingerprint COLLATE "C"'
    )
    return [
        (EmbedderRow(int(i), name, int(dims)), EmbedderRecord(name, fingerprint, int(dims), at))
        for i, name, fingerprint, dims, at in rows
    ]


def restore_embedder(conn: PgConnection, record: EmbedderRecord) -> EmbedderRow:
    row = vectors.register_embedder(conn, record.name, record.fingerprint, record.dims)
    conn.execute("UPDATE embedders SET created_at = %s WHERE id = %s", (record.created_at, row.id))
    return row


def memory_vectors(conn: PgConnection, embedder: EmbedderRow) -> Iterator[MemoryVectors]:
    table = quote_identifier(embedder.table)
    sql = (
        "SELECT m.id, e.content_sha256, v.embedding FROM memory_embeddings AS e "
        "JOIN memories AS m ON m.seq = e.memory_seq "
        "LEFT JOIN vector_rows AS r ON r.memory_seq = e.memory_seq AND r.embedder_id = %(e)s "
        f"LEFT JOIN {table} AS v ON v.rowid = r.rowid "
        'WHERE e.embedder_id = %(e)s ORDER BY m.id COLLATE "C", r.rowid'
    )
    with conn.raw.cursor(name=f"memproc_carry_{embedder.id}", binary=True) as cursor:
        cursor.itersize = _CURSOR_ROWS
        cursor.execute(sql, {"e": embedder.id})
        yield from group_chunks((str(i), str(sha), v) for i, sha, v in cursor)


def memory_slot(conn: PgConnection, memory_id: str) -> tuple[int, str, str] | None:
    row = conn.execute(
        "SELECT seq, scope, kind FROM memories WHERE id = %s", (memory_id,)
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]), str(row[2]))


def procedure_vectors(conn: PgConnection) -> Iterator[ProcedureVector]:
    with conn.raw.cursor(name="memproc_carry_procedures", binary=True) as cursor:
        cursor.itersize = _CURSOR_ROWS
        cursor.execute(
            "SELECT v.id, p.fingerprint, p.vector FROM procedure_vectors AS p "
            "JOIN procedure_versions AS v ON v.seq = p.version_seq "
            'ORDER BY v.id COLLATE "C", p.fingerprint COLLATE "C"'
        )
        for version, fingerprint, vector in cursor:
            yield ProcedureVector(str(version), str(fingerprint), bytes(vector))


def put_procedure_vector(conn: PgConnection, item: ProcedureVector) -> bool:
    cursor = conn.execute(
        "INSERT INTO procedure_vectors (version_seq, fingerprint, vector) "
        "SELECT seq, %s, %s FROM procedure_versions WHERE id = %s",
        (item.fingerprint, item.vector, item.version),
    )
    return bool(cursor.rowcount)
