"""SQL for validity in time: which memories held true at a moment `as_of`, and in what state.

A memory holds true at T when it is not forgotten or purged (erasure is not belief: that
content is gone for every T), its window contains T (`valid_from`, by default when it was
recorded, up to `valid_until`, open when NULL; a supersede closes it at the moment of
succession) and no invalidation was recorded by T. Asked for history, a memory whose window
a supersede closed by T is returned too, as `superseded`. A challenge counts from when it
was recorded, like an invalidation; the log of state changes (`memory_events`) says which.

Searches without `as_of` never come here: their status filter says the same for T = now,
since every state change the status records happened by now.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import apsw
import msgspec
import orjson

from memproc.lifecycle import HIDDEN, STATES
from memproc.store.records import MEMORY_ROW, MemoryRecord, SearchRow
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import Status

_VISIBLE = orjson.dumps([state for state in STATES if state not in HIDDEN]).decode()
_M_COLUMNS = MEMORY_ROW.columns("m.")

# Every fragment reads `m` (a memories row) and binds :as_of and :visible.
_STARTED = (
    "m.status IN (SELECT value FROM json_each(:visible)) "
    "AND coalesce(m.valid_from, m.created_at) <= :as_of"
)
_NOT_RETRACTED = (
    "NOT EXISTS (SELECT 1 FROM memory_events AS e WHERE e.memory_seq = m.seq "
    "AND e.to_status = 'invalidated' AND e.at <= :as_of)"
)
_OPEN = "(m.valid_until IS NULL OR m.valid_until > :as_of)"
_CURRENT = f"({_STARTED} AND {_OPEN} AND {_NOT_RETRACTED})"
_SUPERSEDED = f"({_STARTED} AND m.superseded_by IS NOT NULL AND m.valid_until <= :as_of)"
# `:history` (0 or 1): whether memories superseded by T count as well.
HELD_AT = f"({_CURRENT} OR (:history AND {_SUPERSEDED}))"
# The state at T of a memory HELD_AT selects: superseded, or its last recorded move between
# active and challenged (a memory dated before it was recorded was active until then).
_STATE_AT = (
    f"CASE WHEN {_SUPERSEDED} THEN 'superseded' ELSE coalesce((SELECT e.to_status "
    "FROM memory_events AS e WHERE e.memory_seq = m.seq AND e.at <= :as_of "
    "AND e.to_status IN ('active', 'challenged') ORDER BY e.id DESC LIMIT 1), 'active') END"
)


def bindings(as_of: str, history: bool) -> dict[str, Any]:
    """The parameters HELD_AT reads; `as_of` in the stored form (see `normalize_time`)."""
    return {"as_of": as_of, "history": int(history), "visible": _VISIBLE}


class _SeqState(msgspec.Struct, frozen=True, array_like=True):
    seq: int
    state: Status


_seq_state = RowDecoder(_SeqState)


@routed
def states_at(
    conn: apsw.Connection, seqs: Sequence[int], as_of: str, *, history: bool
) -> dict[int, Status]:
    """The state at `as_of` of each of `seqs` that held true then (or, with `history`, had
    been superseded by then); the others are absent."""
    if not seqs:
        return {}
    rows = conn.execute(
        f"SELECT m.seq, {_STATE_AT} FROM json_each(:seqs) AS j CROSS JOIN memories AS m "
        f"ON m.seq = j.value WHERE {HELD_AT}",
        {"seqs": orjson.dumps(list(seqs)).decode(), **bindings(as_of, history)},
    )
    return {found.seq: found.state for found in map(_seq_state, rows)}


@routed
def search_lexical_at(
    conn: apsw.Connection,
    match: str,
    *,
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    limit: int,
    weights: str,
    as_of: str,
    history: bool,
) -> list[SearchRow]:
    """Like `memories.search_lexical`, over the memories held true at `as_of`: every FTS5
    match is filtered (the windows are not in the filter index, and what held true long ago
    is a small share of the store), then ranked, best first and equal scores by seq."""
    rows = conn.execute(
        f"SELECT {_M_COLUMNS}, f.score FROM (SELECT m.seq AS seq, "
        f"bm25(memories_fts, {weights}) AS score FROM memories_fts "
        "CROSS JOIN memories AS m ON m.seq = memories_fts.rowid "
        "WHERE memories_fts MATCH :match "
        "AND m.scope IN (SELECT value FROM json_each(:scopes)) "
        "AND (:kinds IS NULL OR m.kind IN (SELECT value FROM json_each(:kinds))) "
        f"AND {HELD_AT} ORDER BY score, m.seq LIMIT :limit) AS f "
        "CROSS JOIN memories AS m ON m.seq = f.seq ORDER BY f.score, f.seq",
        {
            "match": match,
            "scopes": orjson.dumps(list(scopes)).decode(),
            "kinds": None if kinds is None else orjson.dumps(list(kinds)).decode(),
            "limit": limit,
            **bindings(as_of, history),
        },
    )
    return [SearchRow(record=MEMORY_ROW(row[:-1]), bm25=row[-1]) for row in rows]


@routed
def of_kind_at(
    conn: apsw.Connection, scope: str, kind: str, order_by: str, limit: int, as_of: str
) -> tuple[list[tuple[MemoryRecord, Status]], int]:
    """The memories of one kind held true at `as_of` (no history), in `order_by`, up to
    `limit`, each with its state then; and how many there were in all."""
    params = {"scope": scope, "kind": kind, "limit": limit, **bindings(as_of, False)}
    where = f"m.scope = :scope AND m.kind = :kind AND {HELD_AT}"
    rows = conn.execute(
        f"SELECT {_M_COLUMNS}, {_STATE_AT} FROM memories AS m WHERE {where} "
        f"ORDER BY {order_by} LIMIT :limit",
        params,
    ).fetchall()
    total = conn.execute(f"SELECT count(*) FROM memories AS m WHERE {where}", params).get
    held = [(MEMORY_ROW(row[:-1]), _seq_state((0, row[-1])).state) for row in rows]
    return held, int(total or 0)
