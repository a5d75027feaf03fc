"""PostgreSQL twin of store/maintenance.py: finding and repairing drift between memories, their
lexical vectors and their dense vectors, with the same IndexReport.

What stands for FTS5 here, and so what "the FTS index is sound" means: each row's `lex` and
`lex_tokens` must be what its text gives (memories.memory_lexical_text), and the per-corpus
counts and posting lists BM25 reads (`lexical_totals`, `lexical_terms`, `lexical_postings`)
must agree with the rows. verify checks all of it, as FTS5's `integrity-check` (rank 1)
compares its index with the content table; rebuild_fts recomputes every row's vector and then
the counts and postings from scratch (the triggers only adjust them, so what drifted would
stay wrong). Both corpora are covered: the counts of one
table serve both, and a procedure's vector is kept the same way.

Vectors: the embedder's table of pgvector rows and `vector_rows` must list each other, as the
vec0 table and `vector_rows` must on SQLite; the differences are found in SQL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from memproc.store import vectors
from memproc.store.maintenance import EmbedderDrift, IndexReport
from memproc.store.postgres.connection import PgConnection
from memproc.store.postgres.lexical import LexicalText, lexical_text
from memproc.store.postgres.memories import memory_lexical_text
from memproc.store.quoting import quote_identifier
from memproc.store.records import SEARCHABLE_STATUSES
from memproc.store.vectors import EmbedderRow

_SEARCHABLE = list(SEARCHABLE_STATUSES)
# Rows read (and their vectors computed) per statement.
_BATCH = 1000


@dataclass(frozen=True)
class _Corpus:
    name: str  # in lexical_totals and lexical_terms
    table: str
    columns: tuple[str, ...]
    text: Callable[..., LexicalText]


_CORPORA = (
    _Corpus(
        "memories",
        "memories",
        ("content", "tags", "context", "neighbour_before", "neighbour_after"),
        memory_lexical_text,
    ),
    # FTS5 indexes a procedure version's search text alone.
    _Corpus(
        "procedures", "procedure_versions", ("search_text",), lambda text: lexical_text([text])
    ),
)

# A batch of rows' texts bound as arrays (one element per row), each with the vector its text
# gives (`expected`), and the rows of `t` whose stored vector or length is not that.
_BATCH_TEXTS = (
    "unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::int[]) "
    "AS x (seq, own, light, nb, tokens), "
    "LATERAL (SELECT memproc_lex(x.own, x.light, x.nb) AS lex) AS expected"
)
_STALE = "t.seq = x.seq AND (t.lex <> expected.lex OR t.lex_tokens <> x.tokens)"


def verify(conn: PgConnection) -> IndexReport:
    memories = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    searchable = conn.execute(
        "SELECT count(*) FROM memories WHERE status = ANY (%s::text[])", (_SEARCHABLE,)
    ).fetchone()[0]
    problems = lexical_problems(conn)
    report = IndexReport(
        memories=int(memories),
        memories_searchable=int(searchable),
        fts_ok=not problems,
        fts_error="; ".join(problems) or None,
    )
    report.embedders = [_embedder_drift(conn, row) for row in vectors.all_embedders(conn)]
    return report


def lexical_problems(conn: PgConnection) -> list[str]:
    """What is wrong with the lexical channel, in words (none when it is sound)."""
    problems = []
    for corpus in _CORPORA:
        sql = f"SELECT count(*) FROM {corpus.table} AS t, {_BATCH_TEXTS} WHERE {_STALE}"
        stale = sum(
            int(conn.execute(sql, batch).fetchone()[0]) for batch in _lexical_batches(conn, corpus)
        )
        if stale:
            problems.append(
                f"{stale} rows of {corpus.table} have a lexical vector not of their text"
            )
        if _totals_drift(conn, corpus):
            problems.append(f"the lexical totals of {corpus.name} disagree with its rows")
        terms = _terms_drift(conn, corpus)
        if terms:
            problems.append(f"{terms} term counts of {corpus.name} disagree with its rows")
        postings = _postings_drift(conn, corpus)
        if postings:
            problems.append(f"{postings} postings of {corpus.name} disagree with its rows")
    return problems


def _lexical_batches(conn: PgConnection, corpus: _Corpus) -> Iterator[tuple[list[object], ...]]:
    """The corpus's rows, a batch at a time, as the arrays _BATCH_TEXTS binds."""
    after = 0
    columns = ", ".join(corpus.columns)
    while True:
        rows = conn.execute(
            f"SELECT seq, {columns} FROM {corpus.table} WHERE seq > %s ORDER BY seq LIMIT %s",
            (after, _BATCH),
        ).fetchall()
        if not rows:
            return
        texts = [corpus.text(*row[1:]) for row in rows]
        yield (
            [int(row[0]) for row in rows],
            [text.own for text in texts],
            [text.light for text in texts],
            [text.neighbours for text in texts],
            [text.token_count for text in texts],
        )
        after = int(rows[-1][0])


def _totals_drift(conn: PgConnection, corpus: _Corpus) -> bool:
    row = conn.execute(
        f"SELECT (SELECT count(*) FROM {corpus.table}), "
        f"(SELECT coalesce(sum(lex_tokens), 0) FROM {corpus.table}), "
        "(SELECT docs FROM lexical_totals WHERE corpus = %(c)s), "
        "(SELECT tokens FROM lexical_totals WHERE corpus = %(c)s)",
        {"c": corpus.name},
    ).fetchone()
    return row[2] is None or (int(row[0]), int(row[1])) != (int(row[2]), int(row[3]))


def _actual_terms(corpus: _Corpus) -> str:
    """In how many rows each lexeme appears, counted from the rows."""
    return (
        f"SELECT l.lexeme, count(*) AS docs FROM {corpus.table} AS t, "
        "unnest(tsvector_to_array(t.lex)) AS l (lexeme) GROUP BY l.lexeme"
    )


def _terms_drift(conn: PgConnection, corpus: _Corpus) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM ({_actual_terms(corpus)}) AS actual "
        "FULL JOIN (SELECT lexeme, docs FROM lexical_terms WHERE corpus = %s) AS kept "
        "ON kept.lexeme = actual.lexeme WHERE actual.docs IS DISTINCT FROM kept.docs",
        (corpus.name,),
    ).fetchone()
    return int(row[0])


def _actual_postings(corpus: _Corpus) -> str:
    """Each row's postings, as its lexical vector gives them."""
    return (
        f"SELECT u.lexeme, t.seq, memproc_lex_freq(u.weights) AS freq, t.lex_tokens AS dl "
        f"FROM {corpus.table} AS t, unnest(t.lex) AS u"
    )


def _postings_drift(conn: PgConnection, corpus: _Corpus) -> int:
    row = conn.execute(
        f"SELECT count(*) FROM ({_actual_postings(corpus)}) AS actual "
        "FULL JOIN (SELECT lexeme, seq, freq, dl FROM lexical_postings WHERE corpus = %s) AS kept "
        "ON kept.lexeme = actual.lexeme AND kept.seq = actual.seq "
        "WHERE (actual.freq, actual.dl) IS DISTINCT FROM (kept.freq, kept.dl)",
        (corpus.name,),
    ).fetchone()
    return int(row[0])


def rebuild_fts(conn: PgConnection) -> None:
    for corpus in _CORPORA:
        update = (
            f"UPDATE {corpus.table} AS t SET lex = expected.lex, lex_tokens = x.tokens "
            f"FROM {_BATCH_TEXTS} WHERE {_STALE}"
        )
        for batch in _lexical_batches(conn, corpus):
            conn.execute(update, batch)
        _recount(conn, corpus)


def _recount(conn: PgConnection, corpus: _Corpus) -> None:
    conn.execute("DELETE FROM lexical_postings WHERE corpus = %s", (corpus.name,))
    conn.execute(
        "INSERT INTO lexical_postings (corpus, lexeme, seq, freq, dl) "
        f"SELECT %s, actual.lexeme, actual.seq, actual.freq, actual.dl "
        f"FROM ({_actual_postings(corpus)}) AS actual",
        (corpus.name,),
    )
    conn.execute("DELETE FROM lexical_terms WHERE corpus = %s", (corpus.name,))
    conn.execute(
        f"INSERT INTO lexical_terms (corpus, lexeme, docs) "
        f"SELECT %s, actual.lexeme, actual.docs FROM ({_actual_terms(corpus)}) AS actual",
        (corpus.name,),
    )
    conn.execute(
        "INSERT INTO lexical_totals (corpus, docs, tokens) "
        f"SELECT %s, count(*), coalesce(sum(lex_tokens), 0) FROM {corpus.table} "
        "ON CONFLICT (corpus) DO UPDATE SET docs = excluded.docs, tokens = excluded.tokens",
        (corpus.name,),
    )


# -- vectors -------------------------------------------------------------------------------------

# Vector rows of a memory row that no longer exists (deleted by hand or restored without it).
_MEMORYLESS = (
    "FROM vector_rows AS r WHERE r.embedder_id = %(id)s "
    "AND NOT EXISTS (SELECT 1 FROM memories AS m WHERE m.seq = r.memory_seq)"
)


def _unlisted(table: str) -> str:
    """The embedder table's rows that vector_rows does not list."""
    return (
        f"FROM {table} AS v WHERE NOT EXISTS (SELECT 1 FROM vector_rows AS r "
        "WHERE r.rowid = v.rowid AND r.embedder_id = %(id)s)"
    )


def _vectorless(table: str) -> str:
    """vector_rows entries of the embedder whose row in its table is gone."""
    return (
        "FROM vector_rows AS r WHERE r.embedder_id = %(id)s "
        f"AND NOT EXISTS (SELECT 1 FROM {table} AS v WHERE v.rowid = r.rowid)"
    )


def _embedder_drift(conn: PgConnection, row: EmbedderRow) -> EmbedderDrift:
    table = quote_identifier(row.table)
    params = {"id": row.id, "searchable": _SEARCHABLE}
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM memory_embeddings AS e JOIN memories AS m "
        "ON m.seq = e.memory_seq WHERE e.embedder_id = %(id)s "
        "AND m.status <> ALL (%(searchable)s::text[])), "
        "(SELECT count(*) FROM memory_embeddings AS e WHERE e.embedder_id = %(id)s "
        "AND e.chunks <> (SELECT count(*) FROM vector_rows AS r "
        "WHERE r.memory_seq = e.memory_seq AND r.embedder_id = %(id)s)), "
        f"(SELECT count(*) {_unlisted(table)}) + (SELECT count(*) {_vectorless(table)}) "
        f"+ (SELECT count(*) {_MEMORYLESS})",
        params,
    ).fetchone()
    return EmbedderDrift(
        name=row.name,
        fingerprint_id=row.id,
        missing_or_stale=vectors.count_pending(conn, row),
        inactive_with_vectors=int(counts[0]),
        orphan_vectors=int(counts[2]),
        chunk_mismatches=int(counts[1]),
    )


def drop_drifted_vectors(conn: PgConnection, row: EmbedderRow) -> int:
    doomed = [
        int(seq)
        for (seq,) in conn.execute(
            "SELECT e.memory_seq FROM memory_embeddings AS e JOIN memories AS m "
            "ON m.seq = e.memory_seq WHERE e.embedder_id = %(id)s "
            "AND (m.status <> ALL (%(searchable)s::text[]) "
            "OR e.content_sha256 <> coalesce(m.index_sha256, m.content_sha256) "
            "OR e.chunks <> (SELECT count(*) FROM vector_rows AS r "
            "WHERE r.memory_seq = e.memory_seq AND r.embedder_id = %(id)s)) "
            "ORDER BY e.memory_seq",
            {"id": row.id, "searchable": _SEARCHABLE},
        ).fetchall()
    ]
    doomed += [
        int(seq)
        for (seq,) in conn.execute(
            f"SELECT DISTINCT memory_seq {_MEMORYLESS} ORDER BY memory_seq", {"id": row.id}
        ).fetchall()
    ]
    for seq in doomed:
        vectors.remove_memory_vectors(conn, row, seq)
    return len(doomed) + _drop_orphans(conn, row)


def _drop_orphans(conn: PgConnection, row: EmbedderRow) -> int:
    table = quote_identifier(row.table)
    unlisted = [
        int(rowid)
        for (rowid,) in conn.execute(
            f"DELETE {_unlisted(table)} RETURNING v.rowid",
            {"id": row.id},
        ).fetchall()
    ]
    for rowid in sorted(unlisted):
        vectors.journal(conn, row.id, rowid, added=False)
    vectorless = conn.execute(f"DELETE {_vectorless(table)}", {"id": row.id}).rowcount
    return len(unlisted) + int(vectorless)


def sqlite_vec_version(conn: PgConnection) -> str:
    """What stands for sqlite-vec here: the pgvector extension's version, for `memproc doctor`."""
    row = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    return str(row[0])
