"""PostgreSQL twins of store/validity.py: the same test of what held true at a moment,
spelt with PostgreSQL's parameters and arrays (the fragments below mirror HELD_AT there)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memproc.lifecycle import HIDDEN, STATES
from memproc.store.postgres.connection import PgConnection
from memproc.store.postgres.memories import lexical_rows
from memproc.store.records import MEMORY_ROW, MemoryRecord, SearchRow
from memproc.wire.vocabulary import Status

_VISIBLE = [state for state in STATES if state not in HIDDEN]
_M_COLUMNS = MEMORY_ROW.columns("m.")

_STARTED = "m.status = ANY (%(visible)s) AND coalesce(m.valid_from, m.created_at) <= %(as_of)s"
_NOT_RETRACTED = (
    "NOT EXISTS (SELECT 1 FROM memory_events AS e WHERE e.memory_seq = m.seq "
    "AND e.to_status = 'invalidated' AND e.at <= %(as_of)s)"
)
_OPEN = "(m.valid_until IS NULL OR m.valid_until > %(as_of)s)"
_CURRENT = f"({_STARTED} AND {_OPEN} AND {_NOT_RETRACTED})"
_SUPERSEDED = f"({_STARTED} AND m.superseded_by IS NOT NULL AND m.valid_until <= %(as_of)s)"
HELD_AT = f"({_CURRENT} OR (%(history)s AND {_SUPERSEDED}))"
_STATE_AT = (
    f"CASE WHEN {_SUPERSEDED} THEN 'superseded' ELSE coalesce((SELECT e.to_status "
    "FROM memory_events AS e WHERE e.memory_seq = m.seq AND e.at <= %(as_of)s "
    "AND e.to_status IN ('active', 'challenged') ORDER BY e.id DESC LIMIT 1), 'active') END"
)


def _bindings(as_of: str, history: bool) -> dict[str, Any]:
    return {"as_of": as_of, "history": bool(history), "visible": _VISIBLE}


def states_at(
    conn: PgConnection, seqs: Sequence[int], as_of: str, *, history: bool
) -> dict[int, Status]:
    if not seqs:
        return {}
    rows = conn.execute(
        f"SELECT m.seq, {_STATE_AT} FROM memories AS m WHERE m.seq = ANY (%(seqs)s) AND {HELD_AT}",
        {"seqs": list(seqs), **_bindings(as_of, history)},
    )
    return {int(seq): state for seq, state in rows}


def search_lexical_at(
    conn: PgConnection,
    match: str,
    *,
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    limit: int,
    weights: str,
    as_of: str,
    history: bool,
) -> list[SearchRow]:
    """`weights` are FTS5's column weights; PostgreSQL's are the weight classes of `lex`
    (postgres/lexical.py), which say the same."""
    return lexical_rows(
        conn,
        match,
        filters=f" AND {HELD_AT}",
        params=_bindings(as_of, history),
        scopes=scopes,
        kinds=kinds,
        limit=limit,
        servable=_VISIBLE,
    )


def of_kind_at(
    conn: PgConnection, scope: str, kind: str, order_by: str, limit: int, as_of: str
) -> tuple[list[tuple[MemoryRecord, Status]], int]:
    params = {"scope": scope, "kind": kind, "limit": limit, **_bindings(as_of, False)}
    where = f"m.scope = %(scope)s AND m.kind = %(kind)s AND {HELD_AT}"
    rows = conn.execute(
        f"SELECT {_M_COLUMNS}, {_STATE_AT} FROM memories AS m WHERE {where} "
        f"ORDER BY {order_by} LIMIT %(limit)s",
        params,
    ).fetchall()
    total = conn.execute(f"SELECT count(*) FROM memories AS m WHERE {where}", params).fetchone()
    held = [(MEMORY_ROW(row[:-1]), row[-1]) for row in rows]
    return held, int(total[0])
