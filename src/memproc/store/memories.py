"""SQL for memories. Functions take an open connection so the caller decides the transaction."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any, Literal

import apsw
import msgspec
import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store import events, revisions, vectors
from memproc.store.quoting import fts_match_any
from memproc.store.records import (
    HIDDEN_STATUSES,
    MEMORY_ROW,
    SEARCHABLE_STATUSES,
    MemoryRecord,
    NewMemory,
    SearchRow,
)
from memproc.store.routing import routed
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import Status

_COLUMNS = MEMORY_ROW.columns()
_HIDDEN = orjson.dumps(HIDDEN_STATUSES).decode()
_SEARCHABLE = orjson.dumps(SEARCHABLE_STATUSES).decode()
# FTS5 column weights for bm25(): content, then tags. FTS5 multiplies a column's hit counts by
# its weight *before* bm25's saturation, so a weight far from 1 distorts bm25 itself; content
# keeps the standard 1 (SciFact lexical nDCG@10 0.682 against 0.657 with 10).
# Context (text around a memory, see migration 3) counts for less than the memory itself, and
# so does the text of its thread neighbours (see store/threads.py), as context of the same kind.
BM25_WEIGHTS = "1.0, 0.5, 0.5, 0.5, 0.5"
# The FTS5 columns that hold a memory's own text, and those that hold its neighbours'.
_OWN_COLUMNS = "{content tags context}"
_NEIGHBOUR_COLUMNS = "{neighbour_before neighbour_after}"


def content_hash(content: str) -> str:
    return hashlib.sha256(content.encode("utf-8")).hexdigest()


@routed
def find_by_client_token(conn: apsw.Connection, scope: str, token: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM memories WHERE scope = ? AND client_token = ?", (scope, token)
    ).fetchone()
    return None if row is None else row[0]


@routed
def find_live_duplicate(conn: apsw.Connection, new: NewMemory) -> str | None:
    """The id of a live memory with exactly this content in this scope and kind, if any."""
    row = conn.execute(
        "SELECT id FROM memories WHERE scope = ? AND kind = ? AND content_sha256 = ? "
        "AND content = ? AND status IN (SELECT value FROM json_each(?)) ORDER BY seq LIMIT 1",
        (
            new.scope,
            new.kind,
            content_hash(new.content),
            new.content,
            _SEARCHABLE,
        ),
    ).fetchone()
    return None if row is None else row[0]


@routed
def insert(conn: apsw.Connection, new: NewMemory) -> tuple[str, int]:
    """Insert an active memory with its first revision and its first log entry; returns its
    id and seq."""
    memory_id = uuid7()
    now = now_rfc3339()
    conn.execute(
        "INSERT INTO memories (id, scope, kind, content, content_sha256, tags, metadata, source, "
        "importance, status, client_token, created_at, updated_at, occurred_at, context, "
        "valid_from, valid_until, thread) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            memory_id,
            new.scope,
            new.kind,
            new.content,
            content_hash(new.content),
            orjson.dumps(new.tags).decode(),
            orjson.dumps(new.metadata).decode(),
            orjson.dumps(new.source).decode(),
            new.importance,
            new.client_token,
            now,
            now,
            new.occurred_at,
            new.context,
            new.valid_from,
            new.valid_until,
            new.thread,
        ),
    )
    seq = conn.last_insert_rowid()
    digest = content_hash(new.content)
    revisions.add(conn, seq, 1, new.content, digest, reason=None, source=new.source, at=now)
    events.record(conn, seq, "remember", None, "active", reason=None, source=new.source, at=now)
    return memory_id, seq


@routed
def get(conn: apsw.Connection, scope: str, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE scope = ? AND id = ?", (scope, memory_id)
    ).fetchone()
    return None if row is None else MEMORY_ROW(row)


@routed
def get_many_by_seq(conn: apsw.Connection, seqs: Sequence[int]) -> dict[int, MemoryRecord]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE seq IN (SELECT value FROM json_each(?))",
        (orjson.dumps(list(seqs)).decode(),),
    )
    return {record.seq: record for record in map(MEMORY_ROW, rows)}


@routed
def list_page(
    conn: apsw.Connection,
    scope: str,
    *,
    kinds: Sequence[str] | None,
    before_seq: int | None,
    limit: int,
) -> list[MemoryRecord]:
    """Newest first, excluding hidden (forgotten, purged) memories; keyset pagination on `seq`."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE scope = :scope "
        "AND status NOT IN (SELECT value FROM json_each(:hidden)) "
        "AND (:before IS NULL OR seq < :before) "
        "AND (:kinds IS NULL OR kind IN (SELECT value FROM json_each(:kinds))) "
        "ORDER BY seq DESC LIMIT :limit",
        {
            "scope": scope,
            "hidden": _HIDDEN,
            "before": before_seq,
            "kinds": None if kinds is None else orjson.dumps(list(kinds)).decode(),
            "limit": limit,
        },
    ).fetchall()
    return [MEMORY_ROW(row) for row in rows]


@routed
def set_status(conn: apsw.Connection, seq: int, status: str, reason: str | None) -> None:
    """Change a memory's status; one leaving the searchable states loses its vectors too."""
    conn.execute(
        "UPDATE memories SET status = ?, status_reason = ?, updated_at = ? WHERE seq = ?",
        (status, reason, now_rfc3339(), seq),
    )
    if status not in SEARCHABLE_STATUSES:
        vectors.delete_vectors(conn, seq)


@routed
def replace_content(conn: apsw.Connection, seq: int, content: str, revision: int) -> None:
    """Make `content` current (its revision row is written by the caller). FTS follows by
    trigger; the vectors go stale by content hash, and the backfill or the caller redoes them."""
    conn.execute(
        "UPDATE memories SET content = ?, content_sha256 = ?, revision = ?, updated_at = ? "
        "WHERE seq = ?",
        (content, content_hash(content), revision, now_rfc3339(), seq),
    )


@routed
def set_successor(conn: apsw.Connection, seq: int, successor_id: str, moment: str) -> None:
    """Name the successor and close the window at the moment of succession (a window that
    already ended earlier keeps its end)."""
    conn.execute(
        "UPDATE memories SET superseded_by = :successor, valid_until = CASE "
        "WHEN valid_until IS NULL OR valid_until > :moment THEN :moment ELSE valid_until END "
        "WHERE seq = :seq",
        {"successor": successor_id, "moment": moment, "seq": seq},
    )


@routed
def set_window(
    conn: apsw.Connection, seq: int, valid_from: str | None, valid_until: str | None
) -> None:
    """Set a memory's window (an edit's: the caller has checked it is not inverted)."""
    conn.execute(
        "UPDATE memories SET valid_from = ?, valid_until = ?, updated_at = ? WHERE seq = ?",
        (valid_from, valid_until, now_rfc3339(), seq),
    )


class _IdStatus(msgspec.Struct, frozen=True, array_like=True):
    id: str
    status: Status


_id_status = RowDecoder(_IdStatus)


@routed
def statuses(conn: apsw.Connection, scope: str, memory_ids: Sequence[str]) -> dict[str, Status]:
    """The status of each of `memory_ids` that exists in `scope` (other scopes' are absent).

    Driven from the ids through their unique index (CROSS JOIN fixes the order): left to
    itself, SQLite walked the scope's index and tested every memory of the scope against the
    list, 67 ms per remember at 100,000 memories even when the list was empty."""
    if not memory_ids:
        return {}
    rows = conn.execute(
        "SELECT m.id, m.status FROM json_each(?) AS j CROSS JOIN memories AS m "
        "ON m.id = j.value WHERE m.scope = ?",
        (orjson.dumps(list(memory_ids)).decode(), scope),
    )
    return {found.id: found.status for found in map(_id_status, rows)}


# How the lexical channel applies its filters (see search_lexical): the ranking alone is read
# LEXICAL_DEPTH_FACTOR times the limit deep (at least LEXICAL_MIN_DEPTH), in stores of at
# least LEXICAL_RANK_FIRST_FROM memories where at least one in LEXICAL_DEPTH_FACTOR of the
# newest LEXICAL_SAMPLE memories may be served.
LEXICAL_DEPTH_FACTOR = 10
LEXICAL_MIN_DEPTH = 200
LEXICAL_RANK_FIRST_FROM = 5_000
LEXICAL_SAMPLE = 100
_M_COLUMNS = MEMORY_ROW.columns("m.")
_SERVABLE = (
    "m.scope IN (SELECT value FROM json_each(:scopes)) "
    "AND m.status IN (SELECT value FROM json_each(:statuses)) "
    "AND (:kinds IS NULL OR m.kind IN (SELECT value FROM json_each(:kinds)))"
)


@routed
def search_lexical(
    conn: apsw.Connection,
    match: str,
    *,
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    limit: int,
) -> list[SearchRow]:
    """bm25-ranked FTS5 matches a search may serve (in `scopes`, of a searchable status, of
    `kinds` if given), best first and equal scores by seq; inactive memories are filtered
    before the limit applies, so they never take a candidate slot.

    Filtering inside the FTS5 query means looking up every match's scope and status: when a
    broad query matched most of 100,000 memories, that cost more than the FTS5 query itself.
    So in a large store where most memories may be served, the ranking is read alone first,
    `depth` deep, and only those rows are filtered. Otherwise, or when that leaves fewer than
    `limit` and the ranking goes deeper, the filtered query runs over every match."""
    filters = {
        "scopes": orjson.dumps(list(scopes)).decode(),
        "statuses": _SEARCHABLE,
        "kinds": None if kinds is None else orjson.dumps(list(kinds)).decode(),
        "limit": limit,
    }
    if _rank_first(conn, filters):
        depth = max(limit * LEXICAL_DEPTH_FACTOR, LEXICAL_MIN_DEPTH)
        ranked = conn.execute(
            f"SELECT rowid, bm25(memories_fts, {BM25_WEIGHTS}) AS score FROM memories_fts "
            "WHERE memories_fts MATCH :match ORDER BY score, rowid LIMIT :depth",
            {"match": match, "depth": depth},
        ).fetchall()
        found = _servable_in_order(conn, ranked, filters)
        if len(found) == limit or len(ranked) < depth:
            return found
    return _search_filtered(conn, match, filters)


def _rank_first(conn: apsw.Connection, filters: dict[str, Any]) -> bool:
    """Whether to read the ranking alone first: in a store of LEXICAL_RANK_FIRST_FROM
    memories or more (below, filtering every match is cheaper than a second pass) when a
    sample of the newest memories says the ranking will hold `limit` servable rows.

    The sample comes from the filter index (about 0.1 ms; nothing is sampled in a smaller
    store), so that a search of a scope with a small share of the store does not pay for
    the FTS5 query twice. Only speed depends on the answer, never results."""
    row = conn.execute(
        "SELECT (SELECT coalesce(max(seq), 0) FROM memories) AS newest, count(*), "
        f"coalesce(sum({_SERVABLE}), 0) FROM (SELECT scope, status, kind FROM memories "
        "INDEXED BY memories_search_filters WHERE (SELECT max(seq) FROM memories) >= :from "
        "ORDER BY seq DESC LIMIT :sample) AS m",
        {**filters, "sample": LEXICAL_SAMPLE, "from": LEXICAL_RANK_FIRST_FROM},
    ).fetchone()
    assert row is not None  # an aggregate always yields a row
    newest, sampled, servable = (int(value) for value in row)
    return newest >= LEXICAL_RANK_FIRST_FROM and servable * LEXICAL_DEPTH_FACTOR >= sampled


def _search_filtered(conn: apsw.Connection, match: str, filters: dict[str, Any]) -> list[SearchRow]:
    """Every match filtered, then ranked. Each match's scope, status and kind are read
    from the filter index, probed by seq alone (the `+`s keep SQLite from probing it once
    per listed scope and status), and whole rows only for the `limit` returned."""
    rows = conn.execute(
        f"SELECT {_M_COLUMNS}, f.score FROM (SELECT m.seq AS seq, "
        f"bm25(memories_fts, {BM25_WEIGHTS}) AS score FROM memories_fts "
        "CROSS JOIN memories AS m INDEXED BY memories_search_filters "
        "ON m.seq = memories_fts.rowid WHERE memories_fts MATCH :match "
        "AND +m.scope IN (SELECT value FROM json_each(:scopes)) "
        "AND +m.status IN (SELECT value FROM json_each(:statuses)) "
        "AND (:kinds IS NULL OR +m.kind IN (SELECT value FROM json_each(:kinds))) "
        "ORDER BY score, m.seq LIMIT :limit) AS f "
        "CROSS JOIN memories AS m ON m.seq = f.seq ORDER BY f.score, f.seq",
        {"match": match, **filters},
    )
    return [SearchRow(record=MEMORY_ROW(row[:-1]), bm25=row[-1]) for row in rows]


def _servable_in_order(
    conn: apsw.Connection, ranked: list[Any], filters: dict[str, Any]
) -> list[SearchRow]:
    """The first `limit` of the ranked (seq, bm25) pairs that pass the filters, as rows."""
    if not ranked:
        return []
    rows = conn.execute(
        f"SELECT {_M_COLUMNS}, j.key FROM json_each(:seqs) AS j CROSS JOIN memories AS m "
        f"ON m.seq = j.value WHERE {_SERVABLE} ORDER BY j.key LIMIT :limit",
        {"seqs": orjson.dumps([seq for seq, _ in ranked]).decode(), **filters},
    )
    return [SearchRow(record=MEMORY_ROW(row[:-1]), bm25=ranked[row[-1]][1]) for row in rows]


@routed
def document_frequencies(conn: apsw.Connection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """How many memories there are, and how many hold each term in their own text (content,
    tags, context), as FTS5 reads the term (stemmed): the idf the lexical feedback channel
    weighs its terms by. Every scope and status counts, as bm25's own statistics do."""
    total = int(conn.execute("SELECT count(*) FROM memories").get)
    counts: dict[str, int] = {}
    for term in terms:
        match = fts_match_any(term)
        if match is None:
            continue
        counts[term] = int(
            conn.execute(
                "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?",
                (f"{_OWN_COLUMNS} : ({match})",),
            ).get
        )
    return total, counts


@routed
def context_of(conn: apsw.Connection, seq: int) -> str | None:
    """A memory's context (searched and embedded, never returned, so not in MemoryRecord)."""
    row = conn.execute("SELECT context FROM memories WHERE seq = ?", (seq,)).fetchone()
    return None if row is None else row[0]


MatchSource = Literal["own", "neighbours", "both"]


@routed
def match_sources(conn: apsw.Connection, match: str, seqs: Sequence[int]) -> dict[int, MatchSource]:
    """For explain: whether the lexical query matched each of `seqs` in its own text ("own"),
    only in its thread neighbours' text ("neighbours"), or in both ("both"). Two probes of
    the FTS5 index, each restricted to one set of columns by a column filter."""
    if not seqs:
        return {}
    own = _matching(conn, f"{_OWN_COLUMNS} : ({match})", seqs)
    theirs = _matching(conn, f"{_NEIGHBOUR_COLUMNS} : ({match})", seqs)
    sources: dict[int, MatchSource] = {}
    for seq in seqs:
        if seq in own:
            sources[seq] = "both" if seq in theirs else "own"
        elif seq in theirs:
            sources[seq] = "neighbours"
    return sources


def _matching(conn: apsw.Connection, match: str, seqs: Sequence[int]) -> set[int]:
    rows = conn.execute(
        "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? "
        "AND rowid IN (SELECT value FROM json_each(?))",
        (match, orjson.dumps(list(seqs)).decode()),
    )
    return {int(seq) for (seq,) in rows}
