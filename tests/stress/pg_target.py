"""What the reliability drivers need to run on a PostgreSQL store as they run on an SQLite file.

A driver's database is either an SQLite path or a `postgresql://` URL (`is_postgres`). On
PostgreSQL there is no file to copy or PRAGMA to run; what stands for them, through the
store's own code:
- `integrity`: `PgStore.integrity_check` (each row's lexical vector against its text, the
  lexical counts against the rows), the check `memproc index verify` starts with;
- `index_report`: `maintenance.verify`, the rest of what `memproc index verify` checks;
- `write_lock_wait`: how long a new write transaction waits for the one write lock. After a
  kill -9 the server aborts the dead process's transactions when it finds their connections
  closed, and a transaction-level advisory lock dies with its transaction, so the next server
  must get the lock at once; a lock still held is a finding, not a wait;
- `vectors_pending`: searchable memories still waiting for vectors.
Foreign keys need no separate check: PostgreSQL enforces them in every statement, so no
committed state can break one (SQLite's `foreign_key_check` has no counterpart to run).

`fresh_database` gives a driver an empty database of its own on a server it may create
databases on (the long modes' `--postgres URL`); the tests use the `pg_url` fixture instead.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from memproc.errors import StorageBusy
from memproc.store import is_server_url, maintenance
from memproc.store import vectors as vector_sql
from memproc.store.postgres.connection import PgSettings
from memproc.store.postgres.database import PgStore

# How long the check after a kill lets a new writer wait for the write lock. Every statement
# the workloads run takes milliseconds, so a lock held this long was left behind by the kill.
LOCK_CHECK_TIMEOUT_MS = 10_000


def is_postgres(db: Path | str) -> bool:
    return isinstance(db, str) and is_server_url(db)


def integrity(url: str) -> list[str]:
    """["ok"], or what is wrong, as `PRAGMA integrity_check` answers on SQLite."""
    store = PgStore(url)
    try:
        return store.integrity_check()
    finally:
        store.close()


def index_report(url: str) -> maintenance.IndexReport:
    """What `memproc index verify` reports, read in one snapshot."""
    store = PgStore(url)
    try:
        with store.reading() as conn:
            return maintenance.verify(conn)
    finally:
        store.close()


def vectors_pending(url: str) -> int:
    """Searchable memories still without current vectors (read beside a running server)."""
    store = PgStore(url)
    try:
        with store.reading() as conn:
            return sum(
                vector_sql.count_pending(conn, row) for row in vector_sql.all_embedders(conn)
            )
    finally:
        store.close()


def write_lock_wait(url: str, timeout_ms: int = LOCK_CHECK_TIMEOUT_MS) -> float | None:
    """Seconds a new write transaction waited for the write lock (it writes nothing), or None
    when the lock was still held after `timeout_ms`."""
    store = PgStore(url, PgSettings(lock_timeout_ms=timeout_ms))
    try:
        started = time.monotonic()
        try:
            with store.writing():
                pass
        except StorageBusy:
            return None
        return time.monotonic() - started
    finally:
        store.close()


@contextmanager
def fresh_database(server_url: str) -> Iterator[str]:
    """A new, empty database with pgvector on the server `server_url` names (any database
    there; the user must be allowed to create databases): its URL; dropped afterwards."""
    name = f"memproc_reliability_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    url = _as_url(server_url, name)
    try:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
        yield url
    finally:
        with psycopg.connect(server_url, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def _as_url(server_url: str, name: str) -> str:
    """The server URL with its database name replaced: `memproc serve --db` takes a URL."""
    head, _, tail = server_url.partition("?")
    base = head.rsplit("/", 1)[0] if head.count("/") > 2 else head
    return f"{base}/{name}" + (f"?{tail}" if tail else "")
