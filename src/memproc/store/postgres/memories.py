"""PostgreSQL twins of store/memories.py: the same rows, in the same order, by other SQL.

Where SQLite's FTS5 table follows `memories` by trigger, here each write that changes text a
search reads (content, tags, context, the thread neighbours' text) also sets the row's `lex`
through `refresh_lex`: the tokens are prepared in Python (lexical.py), which a trigger
cannot call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

from memproc.clock import now_rfc3339
from memproc.ids import uuid7
from memproc.store import vectors
from memproc.store.memories import (
    LEXICAL_DEPTH_FACTOR,
    LEXICAL_MIN_DEPTH,
    MatchSource,
    content_hash,
)
from memproc.store.postgres import lexical
from memproc.store.postgres.connection import PgConnection
from memproc.store.quoting import fts_match_any
from memproc.store.records import (
    HIDDEN_STATUSES,
    MEMORY_ROW,
    SEARCHABLE_STATUSES,
    MemoryRecord,
    NewMemory,
    SearchRow,
)
from memproc.wire.vocabulary import Status

_COLUMNS = MEMORY_ROW.columns()
_M_COLUMNS = MEMORY_ROW.columns("m.")
_HIDDEN = list(HIDDEN_STATUSES)
_SEARCHABLE = list(SEARCHABLE_STATUSES)


def memory_lexical_text(
    content: str,
    tags: str,
    context: str | None,
    neighbour_before: str | None,
    neighbour_after: str | None,
) -> lexical.LexicalText:
    """A memory's text in the weight classes of FTS5's columns (store/memories.py
    BM25_WEIGHTS): its content; its tags and context; its thread neighbours' text."""
    return lexical.lexical_text([content], [tags, context], [neighbour_before, neighbour_after])


def refresh_lex(conn: PgConnection, seqs: Sequence[int]) -> None:
    """Recompute `lex` of the memories `seqs` from their stored text (after a write to it)."""
    rows = conn.execute(
        "SELECT seq, content, tags, context, neighbour_before, neighbour_after FROM memories "
        "WHERE seq = ANY (%s)",
        (list(seqs),),
    ).fetchall()
    for seq, *text in rows:
        params = lexical.lex_params(memory_lexical_text(*text))
        conn.execute(
            f"UPDATE memories SET lex = {lexical.LEX_SQL}, lex_tokens = %(lex_tokens)s "
            "WHERE seq = %(seq)s",
            {**params, "seq": seq},
        )


def find_by_client_token(conn: PgConnection, scope: str, token: str) -> str | None:
    row = conn.execute(
        "SELECT id FROM memories WHERE scope = %s AND client_token = %s", (scope, token)
    ).fetchone()
    return None if row is None else str(row[0])


def find_live_duplicate(conn: PgConnection, new: NewMemory) -> str | None:
    row = conn.execute(
        "SELECT id FROM memories WHERE scope = %s AND kind = %s AND content_sha256 = %s "
        "AND content = %s AND status = ANY (%s) ORDER BY seq LIMIT 1",
        (new.scope, new.kind, content_hash(new.content), new.content, _SEARCHABLE),
    ).fetchone()
    return None if row is None else str(row[0])


def insert(conn: PgConnection, new: NewMemory) -> tuple[str, int]:
    """The row, its first revision and its first log entry in one statement (one round trip
    to the server instead of three): the same rows `revisions.add` and `events.record` write."""
    memory_id = uuid7()
    now = now_rfc3339()
    tags = orjson.dumps(new.tags).decode()
    source = orjson.dumps(new.source).decode()
    text = memory_lexical_text(new.content, tags, new.context, None, None)
    row = conn.execute(
        "WITH m AS (INSERT INTO memories (id, scope, kind, content, content_sha256, tags, "
        "metadata, source, importance, status, client_token, created_at, updated_at, "
        "occurred_at, context, valid_from, valid_until, thread, lex, lex_tokens) "
        "VALUES (%(id)s, %(scope)s, %(kind)s, %(content)s, %(sha)s, %(tags)s, %(metadata)s, "
        "%(source)s, %(importance)s, 'active', %(token)s, %(now)s, %(now)s, %(occurred_at)s, "
        f"%(context)s, %(valid_from)s, %(valid_until)s, %(thread)s, {lexical.LEX_SQL}, "
        "%(lex_tokens)s) RETURNING seq), "
        "r AS (INSERT INTO memory_revisions (memory_seq, revision, content, content_sha256, "
        "reason, source, created_at) SELECT seq, 1, %(content)s, %(sha)s, NULL, %(source)s, "
        "%(now)s FROM m), "
        "e AS (INSERT INTO memory_events (memory_seq, at, action, from_status, to_status, "
        "reason, source, related) SELECT seq, %(now)s, 'remember', NULL, 'active', NULL, "
        "%(source)s, NULL FROM m) "
        "SELECT seq FROM m",
        {
            "id": memory_id,
            "scope": new.scope,
            "kind": new.kind,
            "content": new.content,
            "sha": content_hash(new.content),
            "tags": tags,
            "metadata": orjson.dumps(new.metadata).decode(),
            "source": source,
            "importance": new.importance,
            "token": new.client_token,
            "now": now,
            "occurred_at": new.occurred_at,
            "context": new.context,
            "valid_from": new.valid_from,
            "valid_until": new.valid_until,
            "thread": new.thread,
            **lexical.lex_params(text),
        },
    ).fetchone()
    return memory_id, int(row[0])


def get(conn: PgConnection, scope: str, memory_id: str) -> MemoryRecord | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE scope = %s AND id = %s", (scope, memory_id)
    ).fetchone()
    return None if row is None else MEMORY_ROW(row)


def get_many_by_seq(conn: PgConnection, seqs: Sequence[int]) -> dict[int, MemoryRecord]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM memories WHERE seq = ANY (%s)", (list(seqs),))
    return {record.seq: record for record in map(MEMORY_ROW, rows)}


def list_page(
    conn: PgConnection,
    scope: str,
    *,
    kinds: Sequence[str] | None,
    before_seq: int | None,
    limit: int,
) -> list[MemoryRecord]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM memories WHERE scope = %(scope)s "
        "AND NOT (status = ANY (%(hidden)s)) "
        "AND (%(before)s::bigint IS NULL OR seq < %(before)s) "
        "AND (%(kinds)s::text[] IS NULL OR kind = ANY (%(kinds)s)) "
        "ORDER BY seq DESC LIMIT %(limit)s",
        {
            "scope": scope,
            "hidden": _HIDDEN,
            "before": before_seq,
            "kinds": None if kinds is None else list(kinds),
            "limit": limit,
        },
    ).fetchall()
    return [MEMORY_ROW(row) for row in rows]


def set_status(conn: PgConnection, seq: int, status: str, reason: str | None) -> None:
    conn.execute(
        "UPDATE memories SET status = %s, status_reason = %s, updated_at = %s WHERE seq = %s",
        (status, reason, now_rfc3339(), seq),
    )
    if status not in SEARCHABLE_STATUSES:
        vectors.delete_vectors(conn, seq)


def replace_content(conn: PgConnection, seq: int, content: str, revision: int) -> None:
    conn.execute(
        "UPDATE memories SET content = %s, content_sha256 = %s, revision = %s, updated_at = %s "
        "WHERE seq = %s",
        (content, content_hash(content), revision, now_rfc3339(), seq),
    )
    refresh_lex(conn, [seq])


def set_successor(conn: PgConnection, seq: int, successor_id: str, moment: str) -> None:
    conn.execute(
        "UPDATE memories SET superseded_by = %(successor)s, valid_until = CASE "
        "WHEN valid_until IS NULL OR valid_until > %(moment)s THEN %(moment)s "
        "ELSE valid_until END WHERE seq = %(seq)s",
        {"successor": successor_id, "moment": moment, "seq": seq},
    )


def set_window(
    conn: PgConnection, seq: int, valid_from: str | None, valid_until: str | None
) -> None:
    conn.execute(
        "UPDATE memories SET valid_from = %s, valid_until = %s, updated_at = %s WHERE seq = %s",
        (valid_from, valid_until, now_rfc3339(), seq),
    )


def statuses(conn: PgConnection, scope: str, memory_ids: Sequence[str]) -> dict[str, Status]:
    if not memory_ids:
        return {}
    rows = conn.execute(
        "SELECT id, status FROM memories WHERE id = ANY (%s) AND scope = %s",
        (list(memory_ids), scope),
    )
    return {str(memory_id): status for memory_id, status in rows}


def search_lexical(
    conn: PgConnection,
    match: str,
    *,
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    limit: int,
) -> list[SearchRow]:
    """BM25-ranked matches a search may serve, best first, equal scores by seq: the rows and
    order of the SQLite store's FTS5 query (lexical.py says how the score is the same)."""
    return lexical_rows(conn, match, filters="", params={}, scopes=scopes, kinds=kinds, limit=limit)


def lexical_rows(
    conn: PgConnection,
    match: str,
    *,
    filters: str,
    params: dict[str, Any],
    scopes: Sequence[str],
    kinds: Sequence[str] | None,
    limit: int,
    servable: Sequence[str] = SEARCHABLE_STATUSES,
) -> list[SearchRow]:
    """The BM25 query with extra SQL `filters` on `m` (validity.py adds its window test)."""
    lexemes = lexical.query_lexemes(conn, match)
    if not lexemes:
        return []
    values = {
        **lexical.query_params(lexemes),
        **params,
        "scopes": list(scopes),
        "statuses": list(servable),
        "kinds": None if kinds is None else list(kinds),
        "limit": limit,
        "depth": max(limit * LEXICAL_DEPTH_FACTOR, LEXICAL_MIN_DEPTH),
    }
    # As on SQLite (memories.search_lexical): the ranking alone first, `depth` deep, and only
    # those rows filtered; when that holds fewer than `limit` servable rows, every match is
    # filtered. Either way the rows come out the same; only the cost differs.
    found = conn.execute(_lexical_sql(filters, ranked_first=True), values).fetchall()
    if len(found) < limit:
        found = conn.execute(_lexical_sql(filters, ranked_first=False), values).fetchall()
    return [SearchRow(record=MEMORY_ROW(row[:-1]), bm25=float(row[-1])) for row in found]


def _lexical_sql(filters: str, *, ranked_first: bool) -> str:
    """Rank the rows holding a query lexeme, filter them through the filter index (the
    `depth` best only, or all), keep the best `limit`, and only then read those rows whole."""
    if ranked_first:
        ranking = lexical.head_sql("memories")
        candidates = "(SELECT * FROM ranked ORDER BY score, seq LIMIT %(depth)s)"
    else:
        ranking, candidates = lexical.ranked_sql("memories"), "ranked"
    return (
        f"WITH {lexical.query_terms_sql('memories')}, {ranking}, "
        f"top AS (SELECT r.seq, r.score FROM {candidates} AS r "
        "JOIN memories AS m ON m.seq = r.seq "
        "WHERE m.scope = ANY (%(scopes)s) AND m.status = ANY (%(statuses)s) "
        f"AND (%(kinds)s::text[] IS NULL OR m.kind = ANY (%(kinds)s)){filters} "
        "ORDER BY r.score, r.seq LIMIT %(limit)s) "
        f"SELECT {_M_COLUMNS}, top.score FROM top JOIN memories AS m ON m.seq = top.seq "
        "ORDER BY top.score, top.seq"
    )


def context_of(conn: PgConnection, seq: int) -> str | None:
    row = conn.execute("SELECT context FROM memories WHERE seq = %s", (seq,)).fetchone()
    return None if row is None else row[0]


def match_sources(conn: PgConnection, match: str, seqs: Sequence[int]) -> dict[int, MatchSource]:
    """As in SQLite, from two probes: the query restricted to the weight classes of a
    memory's own text (A, B), then to its neighbours' (C)."""
    if not seqs:
        return {}
    lexemes = list(lexical.query_lexemes(conn, match))
    own = _matching(conn, lexical.tsquery_any(lexemes, "AB"), seqs)
    theirs = _matching(conn, lexical.tsquery_any(lexemes, "C"), seqs)
    sources: dict[int, MatchSource] = {}
    for seq in seqs:
        if seq in own:
            sources[seq] = "both" if seq in theirs else "own"
        elif seq in theirs:
            sources[seq] = "neighbours"
    return sources


def _matching(conn: PgConnection, query: str | None, seqs: Sequence[int]) -> set[int]:
    if query is None:
        return set()
    rows = conn.execute(
        "SELECT seq FROM memories WHERE seq = ANY (%s) AND lex @@ %s::tsquery",
        (list(seqs), query),
    )
    return {int(seq) for (seq,) in rows}


def document_frequencies(conn: PgConnection, terms: Sequence[str]) -> tuple[int, dict[str, int]]:
    """As in SQLite: how many memories there are, and how many hold each term in their own
    text (the weight classes of content, tags and context), the term stemmed as the index
    stems it."""
    total = int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])
    counts: dict[str, int] = {}
    for term in terms:
        match = fts_match_any(term)
        if match is None:
            continue
        query = lexical.tsquery_any(list(lexical.query_lexemes(conn, match)), "AB")
        if query is None:
            counts[term] = 0
            continue
        row = conn.execute(
            "SELECT count(*) FROM memories WHERE lex @@ %s::tsquery", (query,)
        ).fetchone()
        counts[term] = int(row[0])
    return total, counts
