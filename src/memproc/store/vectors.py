"""SQL for embeddings: the embedders registry, per-embedder vec0 tables, and use records.

Vectors exist only for memories a search may serve: a memory leaving the searchable states
loses its vectors in the same transaction, so inactive memories never take a dense candidate
slot. Vectors are float32 bytes; this module does not need numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import apsw
import orjson

from memproc.clock import now_rfc3339
from memproc.store.quoting import quote_identifier
from memproc.store.records import SEARCHABLE_STATUSES


@dataclass(frozen=True)
class EmbedderRow:
    id: int
    name: str
    dims: int

    @property
    def table(self) -> str:
        return f"vec_embedder_{self.id}"


@dataclass(frozen=True)
class PendingMemory:
    seq: int
    scope: str
    kind: str
    content: str
    content_sha256: str


def find_embedder(conn: apsw.Connection, fingerprint: str) -> EmbedderRow | None:
    row = conn.execute(
        "SELECT id, name, dims FROM embedders WHERE fingerprint = ?", (fingerprint,)
    ).fetchone()
    return None if row is None else EmbedderRow(*row)


def register_embedder(conn: apsw.Connection, name: str, fingerprint: str, dims: int) -> EmbedderRow:
    """Find or create the embedder's row and its vec0 table (inside the caller's write)."""
    found = find_embedder(conn, fingerprint)
    if found is not None:
        return found
    conn.execute(
        "INSERT INTO embedders (name, fingerprint, dims, created_at) VALUES (?, ?, ?, ?)",
        (name, fingerprint, dims, now_rfc3339()),
    )
    row = EmbedderRow(conn.last_insert_rowid(), name, dims)
    conn.execute(
        f"CREATE VIRTUAL TABLE {quote_identifier(row.table)} USING vec0("
        "scope TEXT PARTITION KEY, kind TEXT, memory_seq INTEGER, "
        f"embedding float[{int(dims)}] distance_metric=cosine)"
    )
    return row


def all_embedders(conn: apsw.Connection) -> list[EmbedderRow]:
    return [EmbedderRow(*row) for row in conn.execute("SELECT id, name, dims FROM embedders")]


def put_vectors(
    conn: apsw.Connection,
    embedder: EmbedderRow,
    memory: PendingMemory,
    vectors: Sequence[bytes],
) -> None:
    """Replace the memory's vectors for this embedder with one row per chunk."""
    table = quote_identifier(embedder.table)
    conn.execute(f"DELETE FROM {table} WHERE memory_seq = ?", (memory.seq,))
    conn.executemany(
        f"INSERT INTO {table} (scope, kind, memory_seq, embedding) VALUES (?, ?, ?, ?)",
        [(memory.scope, memory.kind, memory.seq, vector) for vector in vectors],
    )
    conn.execute(
        "INSERT INTO memory_embeddings (memory_seq, embedder_id, content_sha256, chunks) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (memory_seq, embedder_id) DO UPDATE SET "
        "content_sha256 = excluded.content_sha256, chunks = excluded.chunks",
        (memory.seq, embedder.id, memory.content_sha256, len(vectors)),
    )


def delete_vectors(conn: apsw.Connection, memory_seq: int) -> None:
    """Drop a memory's vectors under every embedder (it left the searchable states)."""
    for embedder in all_embedders(conn):
        conn.execute(
            f"DELETE FROM {quote_identifier(embedder.table)} WHERE memory_seq = ?", (memory_seq,)
        )
    conn.execute("DELETE FROM memory_embeddings WHERE memory_seq = ?", (memory_seq,))


def pending_memories(
    conn: apsw.Connection, embedder: EmbedderRow, limit: int, after_seq: int = 0
) -> list[PendingMemory]:
    """Searchable memories with no vectors for this embedder, or vectors of older content."""
    rows = conn.execute(
        "SELECT m.seq, m.scope, m.kind, m.content, m.content_sha256 FROM memories AS m "
        "LEFT JOIN memory_embeddings AS e ON e.memory_seq = m.seq AND e.embedder_id = :embedder "
        "WHERE m.seq > :after AND m.status IN (SELECT value FROM json_each(:statuses)) "
        "AND (e.memory_seq IS NULL OR e.content_sha256 != m.content_sha256) "
        "ORDER BY m.seq LIMIT :limit",
        {
            "embedder": embedder.id,
            "after": after_seq,
            "statuses": orjson.dumps(SEARCHABLE_STATUSES).decode(),
            "limit": limit,
        },
    )
    return [PendingMemory(*row) for row in rows]


def is_current(conn: apsw.Connection, memory: PendingMemory) -> bool:
    """The memory still has this content and is still searchable (it was not edited or
    deactivated while its vectors were being computed outside the transaction)."""
    found = conn.execute(
        "SELECT 1 FROM memories WHERE seq = ? AND content_sha256 = ? "
        "AND status IN (SELECT value FROM json_each(?))",
        (memory.seq, memory.content_sha256, orjson.dumps(SEARCHABLE_STATUSES).decode()),
    ).fetchone()
    return found is not None


def count_pending(conn: apsw.Connection, embedder: EmbedderRow) -> int:
    row = conn.execute(
        "SELECT count(*) FROM memories AS m LEFT JOIN memory_embeddings AS e "
        "ON e.memory_seq = m.seq AND e.embedder_id = :embedder "
        "WHERE m.status IN (SELECT value FROM json_each(:statuses)) "
        "AND (e.memory_seq IS NULL OR e.content_sha256 != m.content_sha256)",
        {"embedder": embedder.id, "statuses": orjson.dumps(SEARCHABLE_STATUSES).decode()},
    ).get
    return int(row or 0)


def nearest(
    conn: apsw.Connection,
    embedder: EmbedderRow,
    query: bytes,
    *,
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    k: int,
) -> list[tuple[int, float]]:
    """(memory_seq, cosine distance) of the k nearest chunks in each scope, nearest first.

    One KNN per scope: vec0 answers `scope IN (...)` with k rows per partition anyway.
    """
    table = quote_identifier(embedder.table)
    kind_filter = "" if kinds is None else " AND kind IN (SELECT value FROM json_each(:kinds))"
    hits: list[tuple[int, float]] = []
    for scope in scopes:
        rows = conn.execute(
            f"SELECT memory_seq, distance FROM {table} WHERE embedding MATCH :query "
            f"AND k = :k AND scope = :scope{kind_filter}",
            {
                "query": query,
                "k": k,
                "scope": scope,
                "kinds": None if kinds is None else orjson.dumps(list(kinds)).decode(),
            },
        )
        hits.extend((int(seq), float(distance)) for seq, distance in rows)
    hits.sort(key=lambda hit: hit[1])
    return hits


def record_access(
    conn: apsw.Connection, memory_seqs: Sequence[int], event: str, used: bool
) -> None:
    at = now_rfc3339()
    conn.executemany(
        "INSERT INTO memory_access (memory_seq, at, event, used) VALUES (?, ?, ?, ?)",
        [(seq, at, event, int(used)) for seq in memory_seqs],
    )


def access_counts(conn: apsw.Connection, memory_seqs: Sequence[int]) -> dict[int, int]:
    """How often each memory was used: reinforcing searches plus positive feedback."""
    rows = conn.execute(
        "SELECT memory_seq, count(*) FROM memory_access "
        "WHERE used = 1 AND memory_seq IN (SELECT value FROM json_each(?)) GROUP BY memory_seq",
        (orjson.dumps(list(memory_seqs)).decode(),),
    )
    return {int(seq): int(count) for seq, count in rows}
