"""SQL for embeddings: the embedders registry, per-embedder vec0 tables, and use records.

Vectors exist only for memories a search may serve: a memory leaving the searchable states
loses its vectors in the same transaction, so inactive memories never take a dense candidate
slot. Vectors are float32 bytes; this module does not need numpy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import apsw
import orjson

from memproc.clock import now_rfc3339
from memproc.store.quoting import quote_identifier
from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.routing import routed


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
    """A memory to embed. `content_sha256` is the key its vectors are recorded under: the
    content hash, or for a memory whose thread window adds text, its `index_sha256`."""

    seq: int
    scope: str
    kind: str
    content: str
    content_sha256: str
    context: str | None = None
    neighbour_before: str | None = None
    neighbour_after: str | None = None


# What a memory's current vectors must have been made from (see PendingMemory).
_INDEX_KEY = "coalesce(m.index_sha256, m.content_sha256)"
_PENDING_COLUMNS = (
    f"m.seq, m.scope, m.kind, m.content, {_INDEX_KEY}, m.context, "
    # The window is embedded only when the index key says so (dense thread windows).
    "CASE WHEN m.index_sha256 IS NULL THEN NULL ELSE m.neighbour_before END, "
    "CASE WHEN m.index_sha256 IS NULL THEN NULL ELSE m.neighbour_after END"
)


@routed
def find_embedder(conn: apsw.Connection, fingerprint: str) -> EmbedderRow | None:
    row = conn.execute(
        "SELECT id, name, dims FROM embedders WHERE fingerprint = ?", (fingerprint,)
    ).fetchone()
    return None if row is None else EmbedderRow(*row)


@routed
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


@routed
def all_embedders(conn: apsw.Connection) -> list[EmbedderRow]:
    return [EmbedderRow(*row) for row in conn.execute("SELECT id, name, dims FROM embedders")]


# The journal keeps this many recent entries per trim; a process further behind reloads all.
JOURNAL_KEEP = 200_000
JOURNAL_TRIM_EVERY = 10_000


@routed
def put_vectors(
    conn: apsw.Connection,
    embedder: EmbedderRow,
    memory: PendingMemory,
    vectors: Sequence[bytes],
) -> None:
    """Replace the memory's vectors for this embedder with one row per chunk."""
    remove_memory_vectors(conn, embedder, memory.seq)
    add_vectors(conn, embedder, memory, vectors)


@routed
def add_vectors(
    conn: apsw.Connection,
    embedder: EmbedderRow,
    memory: PendingMemory,
    vectors: Sequence[bytes],
) -> None:
    """One row per chunk for a memory that has no vectors for this embedder yet (one inserted
    in this transaction): put_vectors without looking for old ones to remove."""
    table = quote_identifier(embedder.table)
    for vector in vectors:
        conn.execute(
            "INSERT INTO vector_rows (embedder_id, memory_seq) VALUES (?, ?)",
            (embedder.id, memory.seq),
        )
        rowid = conn.last_insert_rowid()
        conn.execute(
            f"INSERT INTO {table} (rowid, scope, kind, memory_seq, embedding) "
            "VALUES (?, ?, ?, ?, ?)",
            (rowid, memory.scope, memory.kind, memory.seq, vector),
        )
        journal(conn, embedder.id, rowid, added=True)
    conn.execute(
        "INSERT INTO memory_embeddings (memory_seq, embedder_id, content_sha256, chunks) "
        "VALUES (?, ?, ?, ?) ON CONFLICT (memory_seq, embedder_id) DO UPDATE SET "
        "content_sha256 = excluded.content_sha256, chunks = excluded.chunks",
        (memory.seq, embedder.id, memory.content_sha256, len(vectors)),
    )


@routed
def delete_vectors(conn: apsw.Connection, memory_seq: int) -> None:
    """Drop a memory's vectors under every embedder (it left the searchable states)."""
    for embedder in all_embedders(conn):
        remove_memory_vectors(conn, embedder, memory_seq)


@routed
def remove_memory_vectors(conn: apsw.Connection, embedder: EmbedderRow, memory_seq: int) -> None:
    """Delete one memory's vec0 rows for one embedder (and its record), journalling each."""
    table = quote_identifier(embedder.table)
    rowids = [
        int(rowid)
        for (rowid,) in conn.execute(
            "SELECT rowid FROM vector_rows WHERE memory_seq = ? AND embedder_id = ?",
            (memory_seq, embedder.id),
        )
    ]
    for rowid in rowids:
        conn.execute(f"DELETE FROM {table} WHERE rowid = ?", (rowid,))
        conn.execute("DELETE FROM vector_rows WHERE rowid = ?", (rowid,))
        journal(conn, embedder.id, rowid, added=False)
    conn.execute(
        "DELETE FROM memory_embeddings WHERE memory_seq = ? AND embedder_id = ?",
        (memory_seq, embedder.id),
    )


@routed
def journal(conn: apsw.Connection, embedder_id: int, rowid: int, *, added: bool) -> None:
    conn.execute(
        "INSERT INTO vector_journal (embedder_id, vec_rowid, added) VALUES (?, ?, ?)",
        (embedder_id, rowid, int(added)),
    )
    entry = conn.last_insert_rowid()
    if entry % JOURNAL_TRIM_EVERY == 0:
        conn.execute("DELETE FROM vector_journal WHERE id <= ?", (entry - JOURNAL_KEEP,))


# -- what a process's in-memory copy of the vectors reads ---------------------------------------


@routed
def journal_bounds(conn: apsw.Connection, embedder: EmbedderRow) -> tuple[int, int]:
    """(oldest, newest) journal ids for this embedder; (0, 0) when it has none."""
    # Two subqueries, not min() and max() in one: SQLite answers a lone min() or max() from
    # the index in one step, but both together scan every journal row (6 ms at 100,000).
    row = conn.execute(
        "SELECT coalesce((SELECT min(id) FROM vector_journal WHERE embedder_id = :e), 0), "
        "coalesce((SELECT max(id) FROM vector_journal WHERE embedder_id = :e), 0)",
        {"e": embedder.id},
    ).fetchone()
    assert row is not None  # an aggregate always yields a row
    return int(row[0]), int(row[1])


@routed
def journal_since(
    conn: apsw.Connection, embedder: EmbedderRow, after_id: int
) -> list[tuple[int, bool]]:
    """(vec rowid, added) changes after `after_id`, oldest first."""
    rows = conn.execute(
        "SELECT vec_rowid, added FROM vector_journal WHERE embedder_id = ? AND id > ? ORDER BY id",
        (embedder.id, after_id),
    )
    return [(int(rowid), bool(added)) for rowid, added in rows]


VectorRow = tuple[int, str, str, int, bytes]  # rowid, scope, kind, memory_seq, embedding


@routed
def iter_vector_rows(conn: apsw.Connection, embedder: EmbedderRow) -> Iterator[VectorRow]:
    """Every vector row, streamed (100k rows are 150 MB: never hold them all as a list)."""
    table = quote_identifier(embedder.table)
    yield from conn.execute(f"SELECT rowid, scope, kind, memory_seq, embedding FROM {table}")


@routed
def count_vector_rows(conn: apsw.Connection, embedder: EmbedderRow) -> int:
    return int(
        conn.execute("SELECT count(*) FROM vector_rows WHERE embedder_id = ?", (embedder.id,)).get
        or 0
    )


@routed
def vector_rows_by_id(
    conn: apsw.Connection, embedder: EmbedderRow, rowids: Sequence[int]
) -> list[VectorRow]:
    table = quote_identifier(embedder.table)
    sql = f"SELECT rowid, scope, kind, memory_seq, embedding FROM {table} WHERE rowid = ?"
    return [row for rowid in rowids for row in conn.execute(sql, (rowid,))]


@routed
def pending_memories(
    conn: apsw.Connection, embedder: EmbedderRow, limit: int, after_seq: int = 0
) -> list[PendingMemory]:
    """Searchable memories with no vectors for this embedder, or vectors of older content."""
    rows = conn.execute(
        f"SELECT {_PENDING_COLUMNS} FROM memories AS m "
        "LEFT JOIN memory_embeddings AS e ON e.memory_seq = m.seq AND e.embedder_id = :embedder "
        "WHERE m.seq > :after AND m.status IN (SELECT value FROM json_each(:statuses)) "
        f"AND (e.memory_seq IS NULL OR e.content_sha256 != {_INDEX_KEY}) "
        "ORDER BY m.seq LIMIT :limit",
        {
            "embedder": embedder.id,
            "after": after_seq,
            "statuses": orjson.dumps(SEARCHABLE_STATUSES).decode(),
            "limit": limit,
        },
    )
    return [PendingMemory(*row) for row in rows]


@routed
def pending_among(
    conn: apsw.Connection, embedder: EmbedderRow, seqs: Sequence[int]
) -> list[PendingMemory]:
    """Those of `seqs` that are searchable and lack current vectors: the thread neighbours a
    write re-indexed, found by seq wherever they lie in the store."""
    rows = conn.execute(
        f"SELECT {_PENDING_COLUMNS} FROM json_each(:seqs) AS j CROSS JOIN memories AS m "
        "ON m.seq = j.value "
        "LEFT JOIN memory_embeddings AS e ON e.memory_seq = m.seq AND e.embedder_id = :embedder "
        "WHERE m.status IN (SELECT value FROM json_each(:statuses)) "
        f"AND (e.memory_seq IS NULL OR e.content_sha256 != {_INDEX_KEY}) ORDER BY m.seq",
        {
            "seqs": orjson.dumps(sorted(set(seqs))).decode(),
            "embedder": embedder.id,
            "statuses": orjson.dumps(SEARCHABLE_STATUSES).decode(),
        },
    )
    return [PendingMemory(*row) for row in rows]


@routed
def is_current(conn: apsw.Connection, memory: PendingMemory) -> bool:
    """The memory still has this content (and thread window) and is still searchable (it was
    not edited, re-windowed or deactivated while its vectors were computed outside the
    transaction)."""
    found = conn.execute(
        "SELECT 1 FROM memories AS m WHERE m.seq = ? "
        f"AND {_INDEX_KEY} = ? AND m.status IN (SELECT value FROM json_each(?))",
        (memory.seq, memory.content_sha256, orjson.dumps(SEARCHABLE_STATUSES).decode()),
    ).fetchone()
    return found is not None


@routed
def count_pending(conn: apsw.Connection, embedder: EmbedderRow | None) -> int:
    """Searchable memories without current vectors for `embedder` (all of them when the
    embedder was never registered: nothing was embedded with it)."""
    if embedder is None:
        return int(
            conn.execute(
                "SELECT count(*) FROM memories WHERE status IN (SELECT value FROM json_each(?))",
                (orjson.dumps(SEARCHABLE_STATUSES).decode(),),
            ).get
            or 0
        )
    row = conn.execute(
        "SELECT count(*) FROM memories AS m LEFT JOIN memory_embeddings AS e "
        "ON e.memory_seq = m.seq AND e.embedder_id = :embedder "
        "WHERE m.status IN (SELECT value FROM json_each(:statuses)) "
        f"AND (e.memory_seq IS NULL OR e.content_sha256 != {_INDEX_KEY})",
        {"embedder": embedder.id, "statuses": orjson.dumps(SEARCHABLE_STATUSES).decode()},
    ).get
    return int(row or 0)


@routed
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


@routed
def record_access(
    conn: apsw.Connection, memory_seqs: Sequence[int], event: str, used: bool
) -> None:
    at = now_rfc3339()
    conn.executemany(
        "INSERT INTO memory_access (memory_seq, at, event, used) VALUES (?, ?, ?, ?)",
        [(seq, at, event, int(used)) for seq in memory_seqs],
    )


@routed
def access_counts(conn: apsw.Connection, memory_seqs: Sequence[int]) -> dict[int, int]:
    """How often each memory was used: reinforcing searches plus positive feedback."""
    rows = conn.execute(
        "SELECT memory_seq, count(*) FROM memory_access "
        "WHERE used = 1 AND memory_seq IN (SELECT value FROM json_each(?)) GROUP BY memory_seq",
        (orjson.dumps(list(memory_seqs)).decode(),),
    )
    return {int(seq): int(count) for seq, count in rows}


@routed
def vectors_of(
    conn: apsw.Connection, embedder: EmbedderRow, memory_seqs: Sequence[int]
) -> dict[int, list[bytes]]:
    """Each memory's stored vectors (all its chunks, in the order they were stored): what the
    dense feedback channel mixes into its second query. A memory without vectors is absent."""
    table = quote_identifier(embedder.table)
    rows = conn.execute(
        f"SELECT r.memory_seq, v.embedding FROM vector_rows AS r "
        f"JOIN {table} AS v ON v.rowid = r.rowid "
        "WHERE r.memory_seq IN (SELECT value FROM json_each(?)) AND r.embedder_id = ? "
        "ORDER BY r.memory_seq, r.rowid",
        (orjson.dumps(list(memory_seqs)).decode(), embedder.id),
    )
    found: dict[int, list[bytes]] = {}
    for seq, vector in rows:
        found.setdefault(int(seq), []).append(bytes(vector))
    return found


@routed
def chunk_vectors(conn: apsw.Connection, embedder: EmbedderRow, memory_seq: int) -> list[bytes]:
    """One memory's vectors in the order its chunks were stored (for explain)."""
    table = quote_identifier(embedder.table)
    rows = conn.execute(
        f"SELECT v.embedding FROM vector_rows AS r JOIN {table} AS v ON v.rowid = r.rowid "
        "WHERE r.memory_seq = ? AND r.embedder_id = ? ORDER BY r.rowid",
        (memory_seq, embedder.id),
    )
    return [bytes(vector) for (vector,) in rows]
