"""PostgreSQL twin of store/transfer.py's SQL: export and import of a store's records, family
by family, from the same `FAMILIES` descriptions.

What differs from SQLite, and why:
- Text keys are ordered byte by byte (`COLLATE "C"`), as SQLite orders them, so an export of
  either store lists records in the same order whatever the server's default collation.
- An imported memory or procedure version gets its lexical vector (`lex`) in the same INSERT:
  on SQLite, FTS5's triggers index the row; here memproc computes what the row indexes.
- Whether a record was new is the INSERT's row count (there is no changes()).
- A value the column cannot hold is refused as a conflict, as SQLite's STRICT tables refuse
  it, not reported as an internal error.

`backup` stays SQLite's: it copies an SQLite file (a PostgreSQL server has its own tools).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from psycopg import errors as pg

from memproc.errors import Conflict
from memproc.store.postgres.connection import PgConnection
from memproc.store.postgres.lexical import LEX_SQL, LexicalText, lex_params, lexical_text
from memproc.store.postgres.memories import memory_lexical_text
from memproc.store.quoting import quote_identifier
from memproc.store.transfer import FAMILIES, Family, ImportTally

# Order terms that are numbers (row numbers and log ids); every other term is text.
_NUMERIC_ORDER_TERMS = frozenset({"t.seq", "m.seq", "t.id"})


def _order_by(family: Family) -> str:
    return ", ".join(
        term if term in _NUMERIC_ORDER_TERMS else f'{term} COLLATE "C"'
        for term in family.order.split(", ")
    )


def _from_clause(family: Family) -> str:
    table = quote_identifier(family.table)
    if family.by_memory:
        return (
            f"FROM {table} AS t JOIN memories AS m ON m.seq = t.memory_seq "
            "WHERE %(scope)s::text IS NULL OR m.scope = %(scope)s::text"
        )
    return f"FROM {table} AS t WHERE %(scope)s::text IS NULL OR t.scope = %(scope)s::text"


def count(conn: PgConnection, family: Family, scope: str | None) -> int:
    row = conn.execute(f"SELECT count(*) {_from_clause(family)}", {"scope": scope}).fetchone()
    return int(row[0])


def export_rows(conn: PgConnection, family: Family, scope: str | None) -> Iterator[dict[str, Any]]:
    names = (*(["memory"] if family.by_memory else []), *family.columns)
    own = [f"t.{quote_identifier(column)}" for column in family.columns]
    selected = ", ".join((["m.id"] if family.by_memory else []) + own)
    sql = f"SELECT {selected} {_from_clause(family)} ORDER BY {_order_by(family)}"
    for row in conn.execute(sql, {"scope": scope}):
        yield dict(zip(names, row, strict=True))


def scopes(conn: PgConnection) -> list[str]:
    union = " UNION ".join(
        f"SELECT scope FROM {quote_identifier(f.table)}" for f in FAMILIES if not f.by_memory
    )
    rows = conn.execute(f'SELECT scope FROM ({union}) AS s ORDER BY scope COLLATE "C"')
    return [str(scope) for (scope,) in rows]


def insert_record(
    conn: PgConnection, family: Family, record: dict[str, Any], tally: ImportTally
) -> None:
    """Insert one record unless it is already there (see store/transfer.py)."""
    if family.key is None:
        link = str(record[family.link or ""])
        added = link in tally.inserted_parents[family.parent or ""] and _insert(
            conn, family, record
        )
    else:
        added = _insert(conn, family, record)
        if added and family.name in tally.inserted_parents:
            tally.inserted_parents[family.name].add(str(record["id"]))
    (tally.added if added else tally.present)[family.name] += 1


def _insert(conn: PgConnection, family: Family, record: dict[str, Any]) -> bool:
    bindings: dict[str, Any] = {
        c: record.get(c) if c in family.optional else record[c] for c in family.columns
    }
    columns = [*(["memory_seq"] if family.by_memory else []), *family.columns]
    values = [*(["(SELECT seq FROM memories WHERE id = %(memory)s)"] if family.by_memory else [])]
    values += [f"%({c})s" for c in family.columns]
    if family.by_memory:
        bindings["memory"] = record["memory"]
    lexical = _lexical_text(family, record)
    if lexical is not None:
        columns += ["lex", "lex_tokens"]
        values += [LEX_SQL, "%(lex_tokens)s"]
        bindings.update(lex_params(lexical))
    conflict = ""
    if family.key is not None:
        conflict = f" ON CONFLICT ({', '.join(map(quote_identifier, family.key))}) DO NOTHING"
    names = ", ".join(map(quote_identifier, columns))
    sql = f"INSERT INTO {quote_identifier(family.table)} ({names}) VALUES ({', '.join(values)})"
    try:
        return bool(conn.execute(sql + conflict, bindings).rowcount)
    except (pg.DataError, pg.DatatypeMismatch) as exc:
        raise Conflict("the write conflicts with stored data") from exc


def _lexical_text(family: Family, record: dict[str, Any]) -> LexicalText | None:
    """What an imported row indexes (a thread's neighbour text comes with the windows the
    import makes afterwards)."""
    if family.table == "memories":
        return memory_lexical_text(
            record["content"], record["tags"], record.get("context"), None, None
        )
    if family.table == "procedure_versions":  # FTS5 indexes a version's search text alone
        return lexical_text([record["search_text"]])
    return None
