"""Purging a memory: removing every byte of its content from the database for good.

A purge is for secrets and personal data, so hiding is not enough. Within the transaction:
the row becomes a tombstone (same id, scope and kind, status `purged`, empty content, tags,
metadata, source and context, no client token), its revisions, log, outgoing citations and
vectors are deleted, and FTS5 is optimized so that no segment still holds its terms (a delete
in FTS5 only adds a delete marker until segments merge). `secure_delete` (set on every
connection) zeroes freed pages and cells. After the commit, `Store.checkpoint()` copies the WAL
into the database and truncates it, so no old page image survives in the -wal file either.

A purged turn of a thread also leaves its neighbours' index entries: their windows are
recomputed without it (its thread key is erased too) and their vectors, made from text that
held it, are deleted in the same transaction; the caller has them made again after the
commit. The FTS5 optimize then covers the neighbours' old entries as well.

The tombstone keeps an FTS5 document with no terms: FTS5's integrity check (`memproc index
verify`) requires one per content row, and an empty one holds nothing.
"""

from __future__ import annotations

import apsw

from memproc.store import citations, events, revisions, threads, vectors
from memproc.store.annotations import memory_ref
from memproc.store.memories import content_hash
from memproc.store.records import MemoryRecord
from memproc.store.routing import routed
from memproc.store.storage import AnyConnection


def erase(
    conn: AnyConnection, record: MemoryRecord, updated_at: str, window: threads.Window
) -> list[int]:
    """Erase the memory; returns the thread neighbours whose entries no longer hold it (their
    vectors are gone until made again). The steps are the same on both stores; only the
    tombstone's SQL and the lexical index's compaction are each store's own."""
    reached = {*threads.reach(conn, [record.seq], window), *threads.holding(conn, record.seq)}
    neighbours = sorted(reached - {record.seq})
    vectors.delete_vectors(conn, record.seq)
    revisions.delete_all(conn, record.seq)
    events.delete_all(conn, record.seq)
    citations.remove_citing(conn, record.scope, memory_ref(record.id))
    tombstone(conn, record.seq, updated_at)
    rewindowed = threads.rewrite(conn, neighbours, window)
    for seq in rewindowed:
        vectors.delete_vectors(conn, seq)
    compact_lexical_index(conn)
    return rewindowed


@routed
def tombstone(conn: apsw.Connection, seq: int, updated_at: str) -> None:
    """The row keeps its id, scope and kind; everything else it said is emptied."""
    conn.execute(
        "UPDATE memories SET content = '', content_sha256 = ?, tags = '[]', metadata = '{}', "
        "source = '{}', context = NULL, client_token = NULL, occurred_at = NULL, "
        "status = 'purged', status_reason = NULL, updated_at = ?, thread = NULL, "
        "neighbour_ids = NULL, neighbour_before = NULL, neighbour_after = NULL, "
        "index_sha256 = NULL WHERE seq = ?",
        (content_hash(""), updated_at, seq),
    )


@routed
def compact_lexical_index(conn: apsw.Connection) -> None:
    """Merge FTS5's segments, so that no segment still holds a purged row's terms."""
    conn.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
