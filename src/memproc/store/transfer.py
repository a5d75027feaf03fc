"""Export and import of a store's records, family by family, and the online backup.

Why this shape: every record family (a table, or a table's rows tied to a memory) is described
once in `FAMILIES`, and one SELECT and one INSERT are built from each description, so a column
added to a table is exported and imported by adding its name in one place. Local row numbers
(`seq`, rowids) never leave the store: a memory's revisions, events and use log name it by its
id, so records land in any store, empty or not. Vectors are not exported: they are derived, and
the backfill (or `memproc index rebuild`) makes them again.

Idempotence: a record with a natural key (an id, or a composite primary key) is inserted only
when the key is new. A log row (a revision, a state change, an audit entry) has no key of its
own, so it belongs to its parent: it is inserted only when its parent was inserted by the same
import. A second import of the same file therefore adds nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import apsw

from memproc.errors import InvalidParams
from memproc.store.quoting import quote_identifier
from memproc.store.routing import routed


def _names(text: str) -> tuple[str, ...]:
    return tuple(text.split())


@dataclass(frozen=True)
class Family:
    """One kind of exported record. `key`: columns that identify a record (None: a log row,
    which goes with its parent). `parent`: the family whose id a row names in `link`.
    `by_memory`: the table links by `memory_seq`, exported as the memory's id (`memory`)."""

    name: str
    table: str
    columns: tuple[str, ...]
    key: tuple[str, ...] | None
    order: str
    parent: str | None = None
    link: str | None = None
    by_memory: bool = False
    # Columns added after format 1 was first written: a file from before them lacks them, and
    # they import as NULL (for a memory's window: from when it was recorded, open).
    optional: tuple[str, ...] = ()


def _memory_log(name: str, table: str, columns: tuple[str, ...]) -> Family:
    """A memory's revisions, state changes or use: rows of `table` that name it by seq."""
    return Family(
        name, table, columns, None, "m.seq, t.id", parent="memory", link="memory", by_memory=True
    )


FAMILIES: tuple[Family, ...] = (
    Family(
        "memory",
        "memories",
        _names(
            "id scope kind content content_sha256 tags metadata source importance status "
            "status_reason client_token created_at updated_at occurred_at context revision "
            "superseded_by valid_from valid_until thread"
        ),
        key=("id",),
        order="t.seq",
        # A thread's windows are derived: the import makes them again (data_cli).
        optional=("valid_from", "valid_until", "thread"),
    ),
    _memory_log(
        "memory_revision",
        "memory_revisions",
        ("revision", "content", "content_sha256", "reason", "source", "created_at"),
    ),
    _memory_log(
        "memory_event",
        "memory_events",
        ("at", "action", "from_status", "to_status", "reason", "source", "related"),
    ),
    _memory_log("memory_access", "memory_access", ("at", "event", "used")),
    Family(
        "evidence",
        "evidence",
        ("scope", "evidence_id", "claim", "session", "payload", "sha256", "recorded_at"),
        key=("scope", "evidence_id"),
        order="t.seq",
    ),
    Family(
        "checkpoint",
        "checkpoints",
        _names("scope task revision cleared summary decisions next_steps blockers files saved_at"),
        key=("scope", "task", "revision"),
        order="t.seq",
    ),
    Family(
        "procedure",
        "procedures",
        ("id", "scope", "name", "success_count", "failure_count", "created_at", "updated_at"),
        key=("id",),
        order="t.seq",
    ),
    Family(
        "procedure_version",
        "procedure_versions",
        _names(
            "id procedure_id scope version parent_id status body search_text reason "
            "findings episode_id created_at updated_at"
        ),
        key=("id",),
        order="t.seq",
    ),
    Family(
        "procedure_key",
        "procedure_keys",
        ("scope", "key", "procedure_id"),
        key=None,
        order="t.scope, t.key, t.procedure_id",
        parent="procedure",
        link="procedure_id",
    ),
    Family(
        "procedure_audit",
        "procedure_audit",
        ("scope", "procedure_id", "version_id", "event", "actor", "reason", "detail", "at"),
        key=None,
        order="t.seq",
        parent="procedure",
        link="procedure_id",
    ),
    Family(
        "episode",
        "episodes",
        _names("id scope procedure_id version_id outcome failed_at_step notes created_at"),
        key=("id",),
        order="t.seq",
    ),
    Family(
        "citation",
        "citations",
        ("scope", "citing", "cited"),
        key=("scope", "citing", "cited"),
        order="t.scope, t.cited, t.citing",
    ),
    Family(
        "entity_alias",
        "entity_aliases",
        ("scope", "name", "alias", "created_at"),
        key=("scope", "name", "alias"),
        order="t.scope, t.name, t.alias",
    ),
)
FAMILY_BY_NAME = {family.name: family for family in FAMILIES}


# -- export ------------------------------------------------------------------------------------


def _from_clause(family: Family) -> str:
    """FROM and WHERE for a family's rows in one scope (`:scope`) or all (`:scope` NULL)."""
    table = quote_identifier(family.table)
    if family.by_memory:
        return (
            f"FROM {table} AS t JOIN memories AS m ON m.seq = t.memory_seq "
            "WHERE :scope IS NULL OR m.scope = :scope"
        )
    return f"FROM {table} AS t WHERE :scope IS NULL OR t.scope = :scope"


@routed
def count(conn: apsw.Connection, family: Family, scope: str | None) -> int:
    return int(conn.execute(f"SELECT count(*) {_from_clause(family)}", {"scope": scope}).get or 0)


@routed
def export_rows(
    conn: apsw.Connection, family: Family, scope: str | None
) -> Iterator[dict[str, Any]]:
    """The family's rows in one scope (or all), in the store's own order: a store filled by
    importing this export lists them in the same order, so exporting it again gives the same
    bytes."""
    names = (*(["memory"] if family.by_memory else []), *family.columns)
    own = [f"t.{quote_identifier(column)}" for column in family.columns]
    selected = ", ".join((["m.id"] if family.by_memory else []) + own)
    sql = f"SELECT {selected} {_from_clause(family)} ORDER BY {family.order}"
    for row in conn.execute(sql, {"scope": scope}):
        yield dict(zip(names, row, strict=True))


@routed
def scopes(conn: apsw.Connection) -> list[str]:
    """Every scope that holds any record, for `export --all`'s header."""
    union = " UNION ".join(
        f"SELECT scope FROM {quote_identifier(f.table)}" for f in FAMILIES if not f.by_memory
    )
    return [str(scope) for (scope,) in conn.execute(f"SELECT scope FROM ({union}) ORDER BY 1")]


# -- import ------------------------------------------------------------------------------------


@dataclass
class ImportTally:
    """What an import did: records inserted and records already present, per family."""

    added: dict[str, int]
    present: dict[str, int]
    inserted_parents: dict[str, set[str]]

    @classmethod
    def empty(cls) -> ImportTally:
        return cls(
            added={f.name: 0 for f in FAMILIES},
            present={f.name: 0 for f in FAMILIES},
            inserted_parents={"memory": set(), "procedure": set()},
        )


def check_hashes(family: Family, record: dict[str, Any], where: str) -> None:
    """A record whose stored hash does not match its text was damaged or edited: refuse it."""
    for text, digest in (("content", "content_sha256"), ("payload", "sha256")):
        if digest in family.columns and _sha256(record[text]) != record[digest]:
            raise InvalidParams(
                f"{family.name} record's {digest} does not match its {text}",
                path=where,
                reason="hash_mismatch",
            )


def _sha256(text: object) -> str:
    return hashlib.sha256(str(text).encode("utf-8")).hexdigest()


@routed
def insert_record(
    conn: apsw.Connection, family: Family, record: dict[str, Any], tally: ImportTally
) -> None:
    """Insert one record unless it is already there (see the module docstring)."""
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


def _insert(conn: apsw.Connection, family: Family, record: dict[str, Any]) -> bool:
    columns = (*(["memory_seq"] if family.by_memory else []), *family.columns)
    values = ", ".join(
        (["(SELECT seq FROM memories WHERE id = :memory)"] if family.by_memory else [])
        + [f":{c}" for c in family.columns]
    )
    conflict = ""
    if family.key is not None:
        conflict = f" ON CONFLICT ({', '.join(map(quote_identifier, family.key))}) DO NOTHING"
    names = ", ".join(map(quote_identifier, columns))
    bindings = {c: record.get(c) if c in family.optional else record[c] for c in family.columns}
    if family.by_memory:
        bindings["memory"] = record["memory"]
    conn.execute(
        f"INSERT INTO {quote_identifier(family.table)} ({names}) VALUES ({values}){conflict}",
        bindings,
    )
    return bool(conn.changes())


# -- backup ------------------------------------------------------------------------------------

BACKUP_PAGES_PER_STEP = 256


def backup(source_path: str, dest_path: str, report: Callable[[int, int], None]) -> list[str]:
    """Copy the database at `source_path` into a new file with SQLite's online backup API.

    Why the backup API and not a file copy: a copy of a WAL database taken while others write
    may hold half of a transaction. The backup copies the pages of one read snapshot, taken
    when it starts, in steps (so progress can be shown): the file holds every commit made
    before the backup began and nothing half-done. `report(done, total)` follows each step.
    Returns the copy's `PRAGMA integrity_check` (["ok"] when sound).
    """
    from memproc.store.connection import ConnectionSettings, open_connection

    source = open_connection(source_path, ConnectionSettings())
    try:
        # A read transaction held across the steps pins one snapshot: in WAL mode it blocks
        # no writer, and the copy never restarts because of their commits (it could restart
        # for ever under a steady stream of them otherwise).
        source.execute("BEGIN")
        source.execute("SELECT count(*) FROM sqlite_schema")
        dest = apsw.Connection(dest_path)
        try:
            with dest.backup("main", source, "main") as copy:
                while not copy.done:
                    copy.step(BACKUP_PAGES_PER_STEP)
                    report(copy.page_count - copy.remaining, copy.page_count)
            return [str(row[0]) for row in dest.execute("PRAGMA integrity_check")]
        finally:
            dest.close()
    finally:
        source.close()
