"""PostgreSQL twin of store/erasure.py: the same tombstone, and no term of the purged text
left in the lexical counts (the triggers delete a lexeme whose count falls to zero).

What PostgreSQL itself keeps: an UPDATE or DELETE leaves the old row version in the table's
pages until VACUUM reclaims it, its bytes until the space is reused (and in the server's WAL
until it is recycled). `memproc purge --vacuum` or `memproc vacuum` runs VACUUM FULL on the
tables a purge touches (`PgStore.reclaim`); see the README on purging.
"""

from __future__ import annotations

from memproc.store.memories import content_hash
from memproc.store.postgres.connection import PgConnection


def tombstone(conn: PgConnection, seq: int, updated_at: str) -> None:
    """As on SQLite, and the lexical vector emptied with the text (the triggers then drop its
    postings and counts)."""
    conn.execute(
        "UPDATE memories SET content = '', content_sha256 = %s, tags = '[]', metadata = '{}', "
        "source = '{}', context = NULL, client_token = NULL, occurred_at = NULL, "
        "status = 'purged', status_reason = NULL, updated_at = %s, thread = NULL, "
        "neighbour_ids = NULL, neighbour_before = NULL, neighbour_after = NULL, "
        "index_sha256 = NULL, lex = ''::tsvector, lex_tokens = 0 WHERE seq = %s",
        (content_hash(""), updated_at, seq),
    )


def compact_lexical_index(conn: PgConnection) -> None:
    """Nothing to merge: a purged row's postings were deleted with its vector; what the
    table files keep until VACUUM is what `memproc purge --vacuum` reclaims."""
