"""SQL for conversation-aware indexing: each threaded memory's index entry carries its
neighbours' text.

A harness that stores a conversation turn by turn rarely says in one turn what the turn is
about ("Yes, last week!"); the turns around it do. Memories of one scope that share a thread
key are ordered by event time (`occurred_at`, else `created_at`), then write order (`seq`),
and each servable one is indexed with the text of up to `before` servable turns before it and
`after` after it: FTS5 reads them from the `neighbour_before` and `neighbour_after` columns,
and the vectors embed them as an extra window chunk (see `retrieval.indexing`).

Windows are kept current incrementally: when a turn arrives, changes its content or enters
or leaves the servable states, only the memories whose window can reach it are recomputed
(`reach`), and only those whose entry differs are written (`rewrite`). Nothing here touches a
memory without a thread.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import apsw
import msgspec
import orjson

from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.store.storage import AnyConnection

_SEARCHABLE = orjson.dumps(SEARCHABLE_STATUSES).decode()
# Event time, the first ordering key of a thread; the same expression as memories_by_thread's.
_ORDER = "coalesce(occurred_at, created_at)"


@dataclass(frozen=True)
class Window:
    """How many servable turns before and after a memory its index entry includes."""

    before: int
    after: int
    # Whether the vectors embed the window too (an extra chunk), or only FTS5 reads it. A
    # window chunk costs several turns' worth of embedding per write, and every write
    # re-embeds the neighbours whose window it changed (see Config.thread_dense_windows).
    dense: bool = True

    @property
    def empty(self) -> bool:
        return self.before == 0 and self.after == 0


class Member(msgspec.Struct, frozen=True, array_like=True):
    seq: int
    scope: str
    thread: str | None
    order: str
    status: str
    content: str
    context: str | None
    neighbour_ids: str | None
    neighbour_before: str | None
    neighbour_after: str | None
    index_sha256: str | None
    id: str


class Turn(msgspec.Struct, frozen=True, array_like=True):
    seq: int
    id: str
    content: str


MEMBER_ROW = RowDecoder(Member)
TURN_ROW = RowDecoder(Turn)
MEMBER_COLUMNS = (
    f"seq, scope, thread, {_ORDER}, status, content, context, neighbour_ids, "
    "neighbour_before, neighbour_after, index_sha256, id"
)


@dataclass(frozen=True)
class Entry:
    """A memory's derived index entry: its neighbours (ids, oldest first) and their text."""

    before_ids: tuple[str, ...] = ()
    after_ids: tuple[str, ...] = ()
    before_text: str | None = None
    after_text: str | None = None

    @property
    def ids_json(self) -> str | None:
        if not self.before_ids and not self.after_ids:
            return None
        return orjson.dumps({"before": self.before_ids, "after": self.after_ids}).decode()


NO_ENTRY = Entry()


def index_hash(content: str, context: str | None, entry: Entry) -> str | None:
    """What a threaded memory's vectors are made from, when its window adds anything; None
    leaves the content hash in charge, exactly as for a memory without a thread."""
    if entry.before_text is None and entry.after_text is None:
        return None
    parts = [content, context, entry.before_text, entry.after_text]
    return hashlib.sha256(orjson.dumps(parts)).hexdigest()


@routed
def member_row(conn: apsw.Connection, seq: int) -> Member | None:
    row = conn.execute(f"SELECT {MEMBER_COLUMNS} FROM memories WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else MEMBER_ROW(row)


@routed
def servable_side(conn: apsw.Connection, member: Member, limit: int, *, later: bool) -> list[Turn]:
    """Up to `limit` servable turns of the member's thread on one side of it, nearest first."""
    if limit == 0:
        return []
    compare, direction = (">", "ASC") if later else ("<", "DESC")
    # The range on event time alone, which the index answers (a row value comparison made
    # SQLite walk the thread from one end); ties are then settled by seq.
    rows = conn.execute(
        "SELECT seq, id, content FROM memories INDEXED BY memories_by_thread "
        f"WHERE scope = :scope AND thread = :thread AND {_ORDER} {compare}= :order "
        f"AND ({_ORDER} {compare} :order OR seq {compare} :seq) "
        "AND status IN (SELECT value FROM json_each(:servable)) "
        f"ORDER BY {_ORDER} {direction}, seq {direction} LIMIT :limit",
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


def _window_of(conn: AnyConnection, member: Member, window: Window) -> Entry:
    if member.thread is None or member.status not in SEARCHABLE_STATUSES or window.empty:
        return NO_ENTRY
    before = servable_side(conn, member, window.before, later=False)[::-1]
    after = servable_side(conn, member, window.after, later=True)
    return _entry(before, after)


def _entry(before: Sequence[Turn], after: Sequence[Turn]) -> Entry:
    """The entry of a memory with these servable turns before it and after it, in order."""
    return Entry(
        before_ids=tuple(turn.id for turn in before),
        after_ids=tuple(turn.id for turn in after),
        before_text="\n".join(turn.content for turn in before) or None,
        after_text="\n".join(turn.content for turn in after) or None,
    )


def reach(conn: AnyConnection, seqs: Iterable[int], window: Window) -> list[int]:
    """The memories whose index entry may change when the memories `seqs` arrive, change or
    enter or leave the servable states: each of them, the `window.after` servable turns
    before it (whose after-window may hold it) and the `window.before` after it. In thread
    order is not needed: seq order, without duplicates."""
    found: set[int] = set()
    for seq in seqs:
        member = member_row(conn, seq)
        if member is None or member.thread is None:
            continue
        found.add(seq)
        found.update(turn.seq for turn in servable_side(conn, member, window.after, later=False))
        found.update(turn.seq for turn in servable_side(conn, member, window.before, later=True))
    return sorted(found)


@routed
def holding(conn: apsw.Connection, seq: int) -> list[int]:
    """The memories of seq's thread whose stored entry names it, whatever window made them
    (a window setting may have changed since): for a memory that leaves or changes, so
    that no entry keeps its old text."""
    row = conn.execute("SELECT id, scope, thread FROM memories WHERE seq = ?", (seq,)).fetchone()
    if row is None or row[2] is None:
        return []
    memory_id, scope, thread = row
    rows = conn.execute(
        "SELECT m.seq FROM memories AS m INDEXED BY memories_by_thread "
        "WHERE m.scope = :scope AND m.thread = :thread AND m.neighbour_ids IS NOT NULL AND "
        "EXISTS (SELECT 1 FROM json_each(m.neighbour_ids, '$.before') WHERE value = :id "
        "UNION ALL SELECT 1 FROM json_each(m.neighbour_ids, '$.after') WHERE value = :id)",
        {"scope": scope, "thread": thread, "id": memory_id},
    )
    return [int(found) for (found,) in rows]


def rewrite(conn: AnyConnection, seqs: Sequence[int], window: Window) -> list[int]:
    """Recompute the index entry of each of `seqs` and write those that differ; returns the
    seqs whose vectors the write made stale (by `index_sha256`: with dense windows, every
    one written; without, only one whose vectors held a window before)."""
    written = []
    for seq in seqs:
        member = member_row(conn, seq)
        if member is None or member.thread is None:
            continue
        if _store_entry(conn, member, _window_of(conn, member, window), window):
            written.append(seq)
    return written


def _store_entry(conn: AnyConnection, member: Member, entry: Entry, window: Window) -> bool:
    """Write the member's entry if it differs; True when that made its vectors stale."""
    digest = index_hash(member.content, member.context, entry) if window.dense else None
    stored = (
        member.neighbour_ids,
        member.neighbour_before,
        member.neighbour_after,
        member.index_sha256,
    )
    if stored == (entry.ids_json, entry.before_text, entry.after_text, digest):
        return False
    write_entry(conn, member.seq, entry, digest)
    return digest != member.index_sha256


@routed
def write_entry(conn: apsw.Connection, seq: int, entry: Entry, digest: str | None) -> None:
    """Store a memory's index entry (FTS5 follows by trigger)."""
    conn.execute(
        "UPDATE memories SET neighbour_ids = ?, neighbour_before = ?, neighbour_after = ?, "
        "index_sha256 = ? WHERE seq = ?",
        (entry.ids_json, entry.before_text, entry.after_text, digest, seq),
    )


def _arrived_one(conn: AnyConnection, seq: int, window: Window) -> list[int] | None:
    """The update after one servable memory arrived, from one read of its neighbourhood.

    Every memory its arrival reaches lies within `window.after` turns before it or
    `window.before` after it, and each of their windows reaches `window.before` and
    `window.after` further: so the servable turns within `before + after` on each side hold
    every window to recompute. Two range reads instead of two per reached memory, on the
    path every remember of a conversation takes. None when the general path must decide (a
    memory not servable, or not threaded)."""
    member = member_row(conn, seq)
    if member is None or member.thread is None or member.status not in SEARCHABLE_STATUSES:
        return None
    if window.empty:
        return None
    span = window.before + window.after
    earlier = servable_side(conn, member, span, later=False)[::-1]
    later = servable_side(conn, member, span, later=True)
    line = [*earlier, Turn(member.seq, member.id, member.content), *later]
    here = len(earlier)
    written = []
    for position in range(max(0, here - window.after), min(len(line), here + window.before + 1)):
        turn = line[position]
        reached = member if turn.seq == member.seq else member_row(conn, turn.seq)
        if reached is None:
            continue
        before = line[max(0, position - window.before) : position]
        after = line[position + 1 : position + 1 + window.after]
        if _store_entry(conn, reached, _entry(before, after), window):
            written.append(turn.seq)
    return sorted(written)


def refresh(
    conn: AnyConnection, seqs: Iterable[int], window: Window, *, arrived: bool = False
) -> list[int]:
    """The incremental update after `seqs` arrived, changed, or entered or left the
    servable states: `rewrite` over what `reach`es them and what holds them now (nothing
    holds a memory that has just `arrived`)."""
    seqs = list(seqs)
    if arrived and len(seqs) == 1:
        done = _arrived_one(conn, seqs[0], window)
        if done is not None:
            return done
    affected = set(reach(conn, seqs, window))
    for seq in [] if arrived else seqs:
        affected.update(holding(conn, seq))
    return rewrite(conn, sorted(affected), window)


@routed
def newest_seq(conn: apsw.Connection) -> int:
    return int(conn.execute("SELECT coalesce(max(seq), 0) FROM memories").get or 0)


@routed
def threaded_since(conn: apsw.Connection, after_seq: int) -> list[int]:
    """Memories with a thread key written after `after_seq` (an import's), in seq order."""
    rows = conn.execute(
        "SELECT seq FROM memories WHERE seq > ? AND thread IS NOT NULL ORDER BY seq", (after_seq,)
    )
    return [int(seq) for (seq,) in rows]


@routed
def threaded_seqs(conn: apsw.Connection) -> list[int]:
    """Every memory with a thread key, for `memproc index rebuild` (a new window setting)."""
    return [
        int(seq) for (seq,) in conn.execute("SELECT seq FROM memories WHERE thread IS NOT NULL")
    ]


@dataclass(frozen=True)
class Neighbours:
    """What explain shows of a memory's window."""

    before: list[str]
    after: list[str]


@routed
def neighbours(conn: apsw.Connection, seqs: Sequence[int]) -> dict[int, Neighbours]:
    """The neighbour ids of each of `seqs` that has any."""
    rows = conn.execute(
        "SELECT m.seq, m.neighbour_ids FROM json_each(?) AS j CROSS JOIN memories AS m "
        "ON m.seq = j.value WHERE m.neighbour_ids IS NOT NULL",
        (orjson.dumps(list(seqs)).decode(),),
    )
    found = {}
    for seq, raw in rows:
        ids = orjson.loads(raw)
        found[int(seq)] = Neighbours(before=list(ids["before"]), after=list(ids["after"]))
    return found


@routed
def window_members(conn: apsw.Connection, seqs: Sequence[int]) -> dict[int, list[int]]:
    """Each of `seqs` whose index entry holds neighbours: the seqs of its window in thread
    order (the turns before it, itself, the turns after it), as its entry names them. A
    neighbour gone since (purged) is left out; its entry is rewritten by then anyway. One
    statement resolves the neighbour ids in SQLite, in entry order: a search asks this for
    a few hundred windows, and a second round trip through Python cost more than the join."""
    rows = conn.execute(
        f"SELECT m.seq, {_SEQS_OF.format(side='before')}, {_SEQS_OF.format(side='after')} "
        "FROM json_each(?) AS j CROSS JOIN memories AS m "
        "ON m.seq = j.value WHERE m.neighbour_ids IS NOT NULL",
        (orjson.dumps(list(seqs)).decode(),),
    )
    return {
        int(seq): [*orjson.loads(before), int(seq), *orjson.loads(after)]
        for seq, before, after in rows
    }


# The seqs of one side of an entry's neighbours, in the entry's order (json_each's key is
# the array index; ORDER BY inside an aggregate needs SQLite 3.44, and apsw>=3.45 bundles a
# later one); a purged neighbour's id finds no row and drops out.
_SEQS_OF = (
    "(SELECT json_group_array(n.seq ORDER BY s.key) "
    "FROM json_each(m.neighbour_ids, '$.{side}') AS s JOIN memories AS n ON n.id = s.value)"
)


@routed
def thread_text(conn: apsw.Connection, seq: int) -> tuple[str | None, str | None]:
    """(before, after) neighbour text of one memory, as its index entry holds it."""
    row = conn.execute(
        "SELECT neighbour_before, neighbour_after FROM memories WHERE seq = ?", (seq,)
    ).fetchone()
    return (None, None) if row is None else (row[0], row[1])
