"""Carrying vectors from one store to another (`memproc migrate`), by memory and version id.

Why not through the export: vectors are derived, and an export file is for people and other
versions; but a migrate moves a whole store between backends of the same memproc, and making
100,000 memories' vectors again costs an hour the user need not spend. So a migrate copies
each embedder's registry row (its fingerprint is what says which model made a vector), each
memory's `memory_embeddings` record (the content hash its vectors were made from) and the
vectors themselves, and each procedure version's vectors. Row numbers (`seq`, rowids,
embedder ids) differ between stores: a vector names its memory or version by id here and is
given the destination's numbers on the way in.

A vector carried for content the memory no longer has (its record's hash is stale) is carried
as it is: the destination's backfill sees the stale hash and embeds it again, as the source's
would have.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import apsw

from memproc.store import vectors
from memproc.store.quoting import quote_identifier
from memproc.store.routing import routed
from memproc.store.storage import AnyConnection
from memproc.store.vectors import EmbedderRow, PendingMemory


@dataclass(frozen=True)
class EmbedderRecord:
    """An embedder's registry row without its store-local id."""

    name: str
    fingerprint: str
    dims: int
    created_at: str


@dataclass(frozen=True)
class MemoryVectors:
    """One memory's vectors for one embedder, chunks in stored order, named by the memory's id."""

    memory: str
    content_sha256: str
    vectors: tuple[bytes, ...]


@dataclass(frozen=True)
class ProcedureVector:
    version: str
    fingerprint: str
    vector: bytes


@routed
def embedder_records(conn: apsw.Connection) -> list[tuple[EmbedderRow, EmbedderRecord]]:
    """Every registered embedder (the local row, for reading its vectors, and the record to
    carry), by fingerprint."""
    rows = conn.execute(
        "SELECT id, name, fingerprint, dims, created_at FROM embedders ORDER BY fingerprint"
    )
    return [
        (EmbedderRow(int(i), name, int(dims)), EmbedderRecord(name, fingerprint, int(dims), at))
        for i, name, fingerprint, dims, at in rows
    ]


@routed
def restore_embedder(conn: apsw.Connection, record: EmbedderRecord) -> EmbedderRow:
    """The destination's row for the embedder (registered now if new), keeping its date."""
    row = vectors.register_embedder(conn, record.name, record.fingerprint, record.dims)
    conn.execute("UPDATE embedders SET created_at = ? WHERE id = ?", (record.created_at, row.id))
    return row


@routed
def memory_vectors(conn: apsw.Connection, embedder: EmbedderRow) -> Iterator[MemoryVectors]:
    """Each embedded memory's record and vectors, by memory id (bytewise), streamed."""
    table = quote_identifier(embedder.table)
    rows = conn.execute(
        "SELECT m.id, e.content_sha256, v.embedding FROM memory_embeddings AS e "
        "JOIN memories AS m ON m.seq = e.memory_seq "
        "LEFT JOIN vector_rows AS r ON r.memory_seq = e.memory_seq AND r.embedder_id = :e "
        f"LEFT JOIN {table} AS v ON v.rowid = r.rowid "
        "WHERE e.embedder_id = :e ORDER BY m.id, r.rowid",
        {"e": embedder.id},
    )
    yield from group_chunks((str(i), str(sha), v) for i, sha, v in rows)


def group_chunks(rows: Iterator[tuple[str, str, bytes | None]]) -> Iterator[MemoryVectors]:
    """(memory id, hash, chunk or None) rows, ordered by id, as one MemoryVectors per memory
    (a record with no chunks, as an empty content has, gives no vectors)."""
    current: tuple[str, str] | None = None
    chunks: list[bytes] = []
    for memory_id, sha, vector in rows:
        if current is not None and current[0] != memory_id:
            yield MemoryVectors(current[0], current[1], tuple(chunks))
            chunks = []
        current = (memory_id, sha)
        if vector is not None:
            chunks.append(bytes(vector))
    if current is not None:
        yield MemoryVectors(current[0], current[1], tuple(chunks))


@routed
def memory_slot(conn: apsw.Connection, memory_id: str) -> tuple[int, str, str] | None:
    """The destination's (seq, scope, kind) of the memory with this id."""
    row = conn.execute(
        "SELECT seq, scope, kind FROM memories WHERE id = ?", (memory_id,)
    ).fetchone()
    return None if row is None else (int(row[0]), str(row[1]), str(row[2]))


def put_memory_vectors(conn: AnyConnection, embedder: EmbedderRow, item: MemoryVectors) -> bool:
    """Store a carried memory's vectors under the destination's numbers; False when no memory
    of that id is there (the caller counts that as a mismatch)."""
    slot = memory_slot(conn, item.memory)
    if slot is None:
        return False
    # add_vectors reads a pending memory's seq, scope, kind and the hash to record; the text it
    # would embed is not needed: the vectors are given.
    seq, scope, kind = slot
    memory = PendingMemory(seq, scope, kind, "", item.content_sha256)
    vectors.add_vectors(conn, embedder, memory, item.vectors)
    return True


@routed
def procedure_vectors(conn: apsw.Connection) -> Iterator[ProcedureVector]:
    rows = conn.execute(
        "SELECT v.id, p.fingerprint, p.vector FROM procedure_vectors AS p "
        "JOIN procedure_versions AS v ON v.seq = p.version_seq ORDER BY v.id, p.fingerprint"
    )
    for version, fingerprint, vector in rows:
        yield ProcedureVector(str(version), str(fingerprint), bytes(vector))


@routed
def put_procedure_vector(conn: apsw.Connection, item: ProcedureVector) -> bool:
    """False when no version of that id is there."""
    conn.execute(
        "INSERT INTO procedure_vectors (version_seq, fingerprint, vector) "
        "SELECT seq, ?, ? FROM procedure_versions WHERE id = ?",
        (item.fingerprint, item.vector, item.version),
    )
    return bool(conn.changes())
