"""Opening a connection: a tuple of small named set-up steps, each saying why it is there.

Modelled on `apsw.bestpractice`: every connection memproc opens, reader or writer, goes through
the same steps in the same order, so behaviour never depends on which connection ran a query.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache

import apsw


@dataclass(frozen=True)
class ConnectionSettings:
    busy_timeout_ms: int = 5_000
    synchronous: str = "full"


def set_busy_timeout(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """Wait for another process's write lock instead of failing at once: several memproc
    processes may share one file, and a short wait is better than a client-visible error."""
    conn.set_busy_timeout(settings.busy_timeout_ms)


def use_wal(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """Write-ahead logging lets readers proceed while one writer commits, across processes."""
    if not conn.readonly("main"):
        conn.pragma("journal_mode", "wal")


def set_synchronous(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """FULL by default: in WAL mode, NORMAL may lose the last commits on power loss, and
    memproc promises that nothing it acknowledged is lost. Configurable for throughput."""
    conn.pragma("synchronous", settings.synchronous)


def enable_foreign_keys(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """SQLite leaves foreign keys off by default; references between tables must hold."""
    conn.pragma("foreign_keys", True)


def disable_double_quoted_strings(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """A misspelt identifier in double quotes must be an error, not silently a string."""
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DML, 0)
    conn.config(apsw.SQLITE_DBCONFIG_DQS_DDL, 0)


def enable_secure_delete(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """Deleted content is overwritten with zeros, so forgetting a secret really removes it."""
    conn.pragma("secure_delete", True)


@cache
def sqlite_vec_path() -> str:
    """Where the sqlite-vec extension lies. `sqlite_vec.loadable_path()` would tell us too, but
    importing that package imports numpy (about 50 ms of start-up); the extension sits beside
    its `__init__.py`, so find it without importing anything."""
    spec = importlib.util.find_spec("sqlite_vec")
    if spec is None or not spec.submodule_search_locations:
        raise apsw.ExtensionLoadingError("the sqlite-vec package is not installed")
    return os.path.join(spec.submodule_search_locations[0], "vec0")


def load_sqlite_vec(conn: apsw.Connection, settings: ConnectionSettings) -> None:
    """Dense vectors live in sqlite-vec's vec0 tables; the extension must be on every connection
    that may read or write them. Loading is re-disabled straight after for safety."""
    conn.enable_load_extension(True)
    try:
        conn.load_extension(sqlite_vec_path())
    finally:
        conn.enable_load_extension(False)


SetupStep = Callable[[apsw.Connection, ConnectionSettings], None]

CONNECTION_SETUP: tuple[SetupStep, ...] = (
    set_busy_timeout,
    disable_double_quoted_strings,
    use_wal,
    set_synchronous,
    enable_foreign_keys,
    enable_secure_delete,
    load_sqlite_vec,
)


def open_connection(path: str, settings: ConnectionSettings) -> apsw.Connection:
    flags = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE
    conn = apsw.Connection(path, flags=flags)
    try:
        for step in CONNECTION_SETUP:
            step(conn, settings)
    except BaseException:
        conn.close()
        raise
    return conn
