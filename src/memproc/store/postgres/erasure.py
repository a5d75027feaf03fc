"""PostgreSQL twin of store/erasure.py: the same tombstone, and no term of the purged text
left in the lexical counts (the triggers delete a lexeme whose count falls to zero).

What PostgreSQL itself keeps: an UPDATE or DELETE leaves the old row version in the table's
pages until VACUUM reclaims it, its bytes until the space is reused (and in the server's WAL
until it is recycled). `memproc purge --vacuum` or `memproc vacuum` runs VACUUM FULL on the
tables a purge touches (`PgStore.reclaim`); see the README on purging.
"""

from __future__ import annotations

from memproc.store import citations, events, revisions, threads, vectors
from memproc.store.annotations import memory_ref
from memproc.store.memories import content_hash
from memproc.store.postgres.connection import PgConnection
from memproc.store.records import MemoryRecord


def erase(
    conn: PgConnection, record: MemoryRecord, updated_at: str, window: threads.Window
) -> list[int]:
    reached = {*threads.reach(conn, [record.seq], window), *threads.holding(conn, record.seq)}
    neighbours = sorted(reached - {record.seq})
    vectors.delete_vectors(conn, record.seq)
    revisions.delete_all(conn, record.seq)
    events.delete_all(conn, record.seq)
    citations.remove_citing(conn, record.scope, memory_ref(record.id))
    conn.execute(
        "UPDATE memories SET content = '', content_sha256 = %s, tags = '[]', metadata = '{}', "
        "source = '{}', context = NULL, client_token = NULL, occurred_at = NULL, "
        "status = 'purged', status_reason = NULL, updated_at = %s, thread = NULL, "
        "neighbour_ids = NULL, neighbour_before = NULL, neighbour_after = NULL, "
        "index_sha256 = NULL, lex = ''::tsvector, lex_tokens = 0 WHERE seq = %s",
        (content_hash(""), updated_at, record.seq),
    )
    rewindowed = threads.rewrite(conn, neighbours, window)
    for seq in rewindowed:
        vectors.delete_vectors(conn, seq)
    return rewindowed
