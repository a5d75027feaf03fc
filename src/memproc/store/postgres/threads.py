"""PostgreSQL twins of store/threads.py's SQL primitives (the window logic above them is shared).

Writing an entry also refreshes the row's `lex`: FTS5 reads the neighbour columns by trigger,
PostgreSQL's lexical vector is set by the store (see postgres/memories.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import orjson

from memproc.store.postgres.connection import PgConnection
from memproc.store.postgres.memories import refresh_lex
from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.threads import (
    MEMBER_COLUMNS,
    MEMBER_ROW,
    TURN_ROW,
    Entry,
    Member,
    Neighbours,
    Turn,
)

_SEARCHABLE = list(SEARCHABLE_STATUSES)
_ORDER = "coalesce(occurred_at, created_at)"


def member_row(conn: PgConnection, seq: int) -> Member | None:
    row = conn.execute(f"SELECT {MEMBER_COLUMNS} FROM memories WHERE seq = %s", (seq,)).fetchone()
    return None if row is None else MEMBER_ROW(row)


def servable_side(conn: PgConnection, member: Member, limit: int, *, later: bool) -> list[Turn]:
    if limit == 0:
        return []
    compare, direction = (">", "ASC") if later else ("<", "DESC")
    rows = conn.execute(
        "SELECT seq, id, content FROM memories "
        "WHERE scope = %(scope)s AND thread = %(thread)s "
        f"AND ({_ORDER}, seq) {compare} (%(order)s, %(seq)s) "
        "AND status = ANY (%(servable)s) "
        f"ORDER BY {_ORDER} {direction}, seq {direction} LIMIT %(limit)s",
        {
            "scope": member.scope,
            "thread": member.thread,
            "order": member.order,
            "seq": member.seq,
            "servable": _SEARCHABLE,
            "limit": limit,
        },
    )
    return [TURN_ROW(row) for row in rows]


def holding(conn: PgConnection, seq: int) -> list[int]:
    row = conn.execute("SELECT id, scope, thread FROM memories WHERE seq = %s", (seq,)).fetchone()
    if row is None or row[2] is None:
        return []
    memory_id, scope, thread = row
    rows = conn.execute(
        "SELECT m.seq FROM memories AS m "
        "WHERE m.scope = %(scope)s AND m.thread = %(thread)s AND m.neighbour_ids IS NOT NULL "
        "AND (m.neighbour_ids::jsonb -> 'before' ? %(id)s "
        "OR m.neighbour_ids::jsonb -> 'after' ? %(id)s) ORDER BY m.seq",
        {"scope": scope, "thread": thread, "id": memory_id},
    )
    return [int(found) for (found,) in rows]


def write_entry(conn: PgConnection, seq: int, entry: Entry, digest: str | None) -> None:
    conn.execute(
        "UPDATE memories SET neighbour_ids = %s, neighbour_before = %s, neighbour_after = %s, "
        "index_sha256 = %s WHERE seq = %s",
        (entry.ids_json, entry.before_text, entry.after_text, digest, seq),
    )
    refresh_lex(conn, [seq])


def newest_seq(conn: PgConnection) -> int:
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0])


def threaded_since(conn: PgConnection, after_seq: int) -> list[int]:
    rows = conn.execute(
        "SELECT seq FROM memories WHERE seq > %s AND thread IS NOT NULL ORDER BY seq",
        (after_seq,),
    )
    return [int(seq) for (seq,) in rows]


def threaded_seqs(conn: PgConnection) -> list[int]:
    rows = conn.execute("SELECT seq FROM memories WHERE thread IS NOT NULL ORDER BY seq")
    return [int(seq) for (seq,) in rows]


def neighbours(conn: PgConnection, seqs: Sequence[int]) -> dict[int, Neighbours]:
    rows = conn.execute(
        "SELECT seq, neighbour_ids FROM memories WHERE seq = ANY (%s) "
        "AND neighbour_ids IS NOT NULL",
        (list(seqs),),
    )
    found = {}
    for seq, raw in rows:
        ids = orjson.loads(raw)
        found[int(seq)] = Neighbours(before=list(ids["before"]), after=list(ids["after"]))
    return found


def window_members(conn: PgConnection, seqs: Sequence[int]) -> dict[int, list[int]]:
    rows = conn.execute(
        "SELECT seq, neighbour_ids FROM memories WHERE seq = ANY (%s) "
        "AND neighbour_ids IS NOT NULL",
        (list(seqs),),
    )
    entries = [(int(seq), orjson.loads(raw)) for seq, raw in rows]
    found = conn.execute(
        "SELECT id, seq FROM memories WHERE id = ANY (%s)", (neighbour_ids(entries),)
    )
    return in_window_order(entries, {str(i): int(seq) for i, seq in found})


def neighbour_ids(entries: Sequence[tuple[int, dict[str, list[str]]]]) -> list[str]:
    """The ids the entries name, each once: the windows of neighbouring turns overlap, so a
    search's hits name most of their neighbours several times over."""
    return list(dict.fromkeys(i for _, ids in entries for i in (*ids["before"], *ids["after"])))


def in_window_order(
    entries: Sequence[tuple[int, dict[str, list[str]]]], seq_of: dict[str, int]
) -> dict[int, list[int]]:
    """(seq, its neighbour ids) -> seq: [before..., seq, after...], ids resolved by `seq_of`."""
    windows = {}
    for seq, ids in entries:
        before = [seq_of[i] for i in ids["before"] if i in seq_of]
        after = [seq_of[i] for i in ids["after"] if i in seq_of]
        windows[seq] = [*before, seq, *after]
    return windows


def thread_text(conn: PgConnection, seq: int) -> tuple[str | None, str | None]:
    row = conn.execute(
        "SELECT neighbour_before, neighbour_after FROM memories WHERE seq = %s", (seq,)
    ).fetchone()
    return (None, None) if row is None else (row[0], row[1])
