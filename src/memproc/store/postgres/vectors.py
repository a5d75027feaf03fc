"""PostgreSQL twins of store/vectors.py: one pgvector table per embedder instead of vec0.

Each table holds `vector(dims)` rows with an HNSW index (cosine), keyed by the same `rowid`
as `vector_rows`, and the same journal feeds each process's in-memory copy. `nearest` (used
only until that copy is loaded, or when it is too large) asks the HNSW index with a search
breadth of at least the rows asked for, per scope; unlike vec0 it is approximate, as every
pgvector index is, which the in-memory copy (exact) makes rare in practice.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from memproc.clock import now_rfc3339
from memproc.store.postgres.connection import PgConnection, Vector
from memproc.store.quoting import quote_identifier
from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.vectors import (
    JOURNAL_KEEP,
    JOURNAL_TRIM_EVERY,
    EmbedderRow,
    PendingMemory,
    VectorRow,
)

_INDEX_KEY = "coalesce(m.index_sha256, m.content_sha256)"
_PENDING_COLUMNS = (
    f"m.seq, m.scope, m.kind, m.content, {_INDEX_KEY}, m.context, "
    "CASE WHEN m.index_sha256 IS NULL THEN NULL ELSE m.neighbour_before END, "
    "CASE WHEN m.index_sha256 IS NULL THEN NULL ELSE m.neighbour_after END"
)
_SEARCHABLE = list(SEARCHABLE_STATUSES)
# The least HNSW search breadth (pgvector's default is 40).
MIN_EF_SEARCH = 40


def find_embedder(conn: PgConnection, fingerprint: str) -> EmbedderRow | None:
    row = conn.execute(
        "SELECT id, name, dims FROM embedders WHERE fingerprint = %s", (fingerprint,)
    ).fetchone()
    return None if row is None else EmbedderRow(int(row[0]), row[1], int(row[2]))


def register_embedder(conn: PgConnection, name: str, fingerprint: str, dims: int) -> EmbedderRow:
    found = find_embedder(conn, fingerprint)
    if found is not None:
        return found
    row = conn.execute(
        "INSERT INTO embedders (name, fingerprint, dims, created_at) VALUES (%s, %s, %s, %s) "
        "RETURNING id",
        (name, fingerprint, dims, now_rfc3339()),
    ).fetchone()
    embedder = EmbedderRow(int(row[0]), name, dims)
    table = quote_identifier(embedder.table)
    conn.execute(
        f"CREATE TABLE {table} (rowid bigint PRIMARY KEY, scope text NOT NULL, "
        f"kind text NOT NULL, memory_seq bigint NOT NULL, embedding vector({int(dims)}) NOT NULL)"
    )
    conn.execute(
        f"CREATE INDEX {quote_identifier(embedder.table + '_hnsw')} ON {table} "
        "USING hnsw (embedding vector_cosine_ops)"
    )
    return embedder


def all_embedders(conn: PgConnection) -> list[EmbedderRow]:
    rows = conn.execute("SELECT id, name, dims FROM embedders ORDER BY id")
    return [EmbedderRow(int(i), name, int(dims)) for i, name, dims in rows]


def put_vectors(
    conn: PgConnection, embedder: EmbedderRow, memory: PendingMemory, vectors: Sequence[bytes]
) -> None:
    remove_memory_vectors(conn, embedder, memory.seq)
    add_vectors(conn, embedder, memory, vectors)


def add_vectors(
    conn: PgConnection, embedder: EmbedderRow, memory: PendingMemory, vectors: Sequence[bytes]
) -> None:
    table = quote_identifier(embedder.table)
    for vector in vectors:
        rowid = int(
            conn.execute(
                "INSERT INTO vector_rows (embedder_id, memory_seq) VALUES (%s, %s) RETURNING rowid",
                (embedder.id, memory.seq),
            ).fetchone()[0]
        )
        conn.execute(
            f"INSERT INTO {table} (rowid, scope, kind, memory_seq, embedding) "
            "VALUES (%s, %s, %s, %s, %s)",
            (rowid, memory.scope, memory.kind, memory.seq, Vector(vector)),
        )
        journal(conn, embedder.id, rowid, added=True)
    conn.execute(
        "INSERT INTO memory_embeddings (memory_seq, embedder_id, content_sha256, chunks) "
        "VALUES (%s, %s, %s, %s) ON CONFLICT (memory_seq, embedder_id) DO UPDATE SET "
        "content_sha256 = excluded.content_sha256, chunks = excluded.chunks",
        (memory.seq, embedder.id, memory.content_sha256, len(vectors)),
    )


def delete_vectors(conn: PgConnection, memory_seq: int) -> None:
    for embedder in all_embedders(conn):
        remove_memory_vectors(conn, embedder, memory_seq)


def remove_memory_vectors(conn: PgConnection, embedder: EmbedderRow, memory_seq: int) -> None:
    table = quote_identifier(embedder.table)
    rowids = [
        int(rowid)
        for (rowid,) in conn.execute(
            "SELECT rowid FROM vector_rows WHERE memory_seq = %s AND embedder_id = %s "
            "ORDER BY rowid",
            (memory_seq, embedder.id),
        ).fetchall()
    ]
    for rowid in rowids:
        conn.execute(f"DELETE FROM {table} WHERE rowid = %s", (rowid,))
        conn.execute("DELETE FROM vector_rows WHERE rowid = %s", (rowid,))
        journal(conn, embedder.id, rowid, added=False)
    conn.execute(
        "DELETE FROM memory_embeddings WHERE memory_seq = %s AND embedder_id = %s",
        (memory_seq, embedder.id),
    )


def journal(conn: PgConnection, embedder_id: int, rowid: int, *, added: bool) -> None:
    entry = int(
        conn.execute(
            "INSERT INTO vector_journal (embedder_id, vec_rowid, added) VALUES (%s, %s, %s) "
            "RETURNING id",
            (embedder_id, rowid, int(added)),
        ).fetchone()[0]
    )
    if entry % JOURNAL_TRIM_EVERY == 0:
        conn.execute("DELETE FROM vector_journal WHERE id <= %s", (entry - JOURNAL_KEEP,))


def journal_bounds(conn: PgConnection, embedder: EmbedderRow) -> tuple[int, int]:
    row = conn.execute(
        "SELECT coalesce(min(id), 0), coalesce(max(id), 0) FROM vector_journal "
        "WHERE embedder_id = %s",
        (embedder.id,),
    ).fetchone()
    return int(row[0]), int(row[1])


def journal_since(
    conn: PgConnection, embedder: EmbedderRow, after_id: int
) -> list[tuple[int, bool]]:
    rows = conn.execute(
        "SELECT vec_rowid, added FROM vector_journal WHERE embedder_id = %s AND id > %s "
        "ORDER BY id",
        (embedder.id, after_id),
    )
    return [(int(rowid), bool(added)) for rowid, added in rows]


def iter_vector_rows(conn: PgConnection, embedder: EmbedderRow) -> Iterator[VectorRow]:
    """Every vector row, streamed through a server-side cursor (never all held at once)."""
    table = quote_identifier(embedder.table)
    with conn.raw.cursor(name=f"memproc_vectors_{embedder.id}", binary=True) as cursor:
        cursor.itersize = 4096
        cursor.execute(f"SELECT rowid, scope, kind, memory_seq, embedding FROM {table}")
        for rowid, scope, kind, seq, embedding in cursor:
            yield int(rowid), scope, kind, int(seq), embedding


def count_vector_rows(conn: PgConnection, embedder: EmbedderRow) -> int:
    row = conn.execute(
        "SELECT count(*) FROM vector_rows WHERE embedder_id = %s", (embedder.id,)
    ).fetchone()
    return int(row[0])


def vector_rows_by_id(
    conn: PgConnection, embedder: EmbedderRow, rowids: Sequence[int]
) -> list[VectorRow]:
    """In the order of `rowids`, as the SQLite store reads them one by one."""
    if not rowids:
        return []
    table = quote_identifier(embedder.table)
    rows = conn.execute(
        f"SELECT v.rowid, v.scope, v.kind, v.memory_seq, v.embedding "
        f"FROM unnest(%s::bigint[]) WITH ORDINALITY AS r (rowid, n) "
        f"JOIN {table} AS v ON v.rowid = r.rowid ORDER BY r.n",
        (list(rowids),),
        binary=True,
    )
    return [(int(r), scope, kind, int(seq), emb) for r, scope, kind, seq, emb in rows]


def pending_memories(
    conn: PgConnection, embedder: EmbedderRow, limit: int, after_seq: int = 0
) -> list[PendingMemory]:
    rows = conn.execute(
        f"SELECT {_PENDING_COLUMNS} FROM memories AS m "
        "LEFT JOIN memory_embeddings AS e ON e.memory_seq = m.seq "
        "AND e.embedder_id = %(embedder)s "
        "WHERE m.seq > %(after)s AND m.status = ANY (%(statuses)s) "
        f"AND (e.memory_seq IS NULL OR e.content_sha256 != {_INDEX_KEY}) "
        "ORDER BY m.seq LIMIT %(limit)s",
        {"embedder": embedder.id, "after": after_seq, "statuses": _SEARCHABLE, "limit": limit},
    )
    return [PendingMemory(*row) for row in rows]


def pending_among(
    conn: PgConnection, embedder: EmbedderRow, seqs: Sequence[int]
) -> list[PendingMemory]:
    rows = conn.execute(
        f"SELECT {_PENDING_COLUMNS} FROM memories AS m "
        "LEFT JOIN memory_embeddings AS e ON e.memory_seq = m.seq "
        "AND e.embedder_id = %(embedder)s "
        "WHERE m.seq = ANY (%(seqs)s) AND m.status = ANY (%(statuses)s) "
        f"AND (e.memory_seq IS NULL OR e.content_sha256 != {_INDEX_KEY}) ORDER BY m.seq",
        {"seqs": sorted(set(seqs)), "embedder": embedder.id, "statuses": _SEARCHABLE},
    )
    return [PendingMemory(*row) for row in rows]


def is_current(conn: PgConnection, memory: PendingMemory) -> bool:
    found = conn.execute(
        f"SELECT 1 FROM memories AS m WHERE m.seq = %s AND {_INDEX_KEY} = %s "
        "AND m.status = ANY (%s)",
        (memory.seq, memory.content_sha256, _SEARCHABLE),
    ).fetchone()
    return found is not None


def count_pending(conn: PgConnection, embedder: EmbedderRow | None) -> int:
    if embedder is None:
        row = conn.execute(
            "SELECT count(*) FROM memories WHERE status = ANY (%s)", (_SEARCHABLE,)
        ).fetchone()
        return int(row[0])
    row = conn.execute(
        "SELECT count(*) FROM memories AS m LEFT JOIN memory_embeddings AS e "
        "ON e.memory_seq = m.seq AND e.embedder_id = %(embedder)s "
        "WHERE m.status = ANY (%(statuses)s) "
        f"AND (e.memory_seq IS NULL OR e.content_sha256 != {_INDEX_KEY})",
        {"embedder": embedder.id, "statuses": _SEARCHABLE},
    ).fetchone()
    return int(row[0])


def nearest(
    conn: PgConnection,
    embedder: EmbedderRow,
    query: bytes,
    *,
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    k: int,
) -> list[tuple[int, float]]:
    """(memory_seq, cosine distance) of the k nearest chunks in each scope, nearest first."""
    table = quote_identifier(embedder.table)
    conn.execute(f"SET LOCAL hnsw.ef_search = {max(MIN_EF_SEARCH, min(int(k), 1000))}")
    hits: list[tuple[int, float]] = []
    for scope in scopes:
        rows = conn.execute(
            f"SELECT memory_seq, embedding <=> %(query)s AS distance FROM {table} "
            "WHERE scope = %(scope)s "
            "AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s)) "
            "ORDER BY embedding <=> %(query)s LIMIT %(k)s",
            {
                "query": Vector(query),
                "scope": scope,
                "kinds": None if kinds is None else list(kinds),
                "k": k,
            },
        )
        hits.extend((int(seq), float(distance)) for seq, distance in rows)
    hits.sort(key=lambda hit: hit[1])
    return hits


def record_access(conn: PgConnection, memory_seqs: Sequence[int], event: str, used: bool) -> None:
    at = now_rfc3339()
    conn.executemany(
        "INSERT INTO memory_access (memory_seq, at, event, used) VALUES (%s, %s, %s, %s)",
        [(seq, at, event, int(used)) for seq in memory_seqs],
    )


def access_counts(conn: PgConnection, memory_seqs: Sequence[int]) -> dict[int, int]:
    rows = conn.execute(
        "SELECT memory_seq, count(*) FROM memory_access "
        "WHERE used = 1 AND memory_seq = ANY (%s) GROUP BY memory_seq",
        (list(memory_seqs),),
    )
    return {int(seq): int(count) for seq, count in rows}


def chunk_vectors(conn: PgConnection, embedder: EmbedderRow, memory_seq: int) -> list[bytes]:
    table = quote_identifier(embedder.table)
    rows = conn.execute(
        f"SELECT v.embedding FROM vector_rows AS r JOIN {table} AS v ON v.rowid = r.rowid "
        "WHERE r.memory_seq = %s AND r.embedder_id = %s ORDER BY r.rowid",
        (memory_seq, embedder.id),
        binary=True,
    )
    return [bytes(vector) for (vector,) in rows]


def vectors_of(
    conn: PgConnection, embedder: EmbedderRow, memory_seqs: Sequence[int]
) -> dict[int, list[bytes]]:
    table = quote_identifier(embedder.table)
    rows = conn.execute(
        f"SELECT r.memory_seq, v.embedding FROM vector_rows AS r "
        f"JOIN {table} AS v ON v.rowid = r.rowid "
        "WHERE r.memory_seq = ANY (%s) AND r.embedder_id = %s ORDER BY r.memory_seq, r.rowid",
        (list(memory_seqs), embedder.id),
        binary=True,
    )
    found: dict[int, list[bytes]] = {}
    for seq, vector in rows:
        found.setdefault(int(seq), []).append(bytes(vector))
    return found
