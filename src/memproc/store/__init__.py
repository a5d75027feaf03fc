"""Storage: all SQL lives here; nothing in this package knows the protocol.

The SQLite store (APSW, the modules beside this one) is the default and embedded; the
PostgreSQL store (`store/postgres/`) serves the same functions when the configured `db` is a
server URL (see `store/routing.py` for how a call finds its store).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memproc.store.database import Store
from memproc.store.records import MemoryRecord, NewMemory, SearchRow
from memproc.store.storage import Storage

if TYPE_CHECKING:
    from memproc.config import Config
    from memproc.store.postgres.database import PgStore

__all__ = [
    "MemoryRecord",
    "NewMemory",
    "SearchRow",
    "Storage",
    "Store",
    "is_server_url",
    "open_store",
]

SERVER_SCHEMES = ("postgresql://", "postgres://")


def is_server_url(db: str) -> bool:
    return db.startswith(SERVER_SCHEMES)


# libpq's other way of naming a server ("host=db1 dbname=mem"): taken as a file name, it
# would silently become a new SQLite file of that name.
_KEYWORD_CONNINFO = re.compile(r"^\s*(host|hostaddr|dbname|user|port|service)\s*=", re.I)


def open_store(config: Config) -> Storage:
    """The store `config.db` names: a PostgreSQL server for a URL, else an SQLite file.
    psycopg is imported only for a server URL (it is an optional extra)."""
    if is_server_url(config.db):
        return _open_server(config)
    if _KEYWORD_CONNINFO.match(config.db):
        from memproc.errors import StorageUnavailable

        raise StorageUnavailable(
            "storage unavailable: `db` looks like a PostgreSQL connection string; give the "
            "server as a URL (postgresql://user@host:port/database)",
            reason="bad_url",
        )
    from memproc.store.connection import ConnectionSettings

    settings = ConnectionSettings(
        busy_timeout_ms=config.busy_timeout_ms, synchronous=config.synchronous
    )
    return Store(config.db, settings)


def _open_server(config: Config) -> PgStore:
    from memproc.errors import StorageUnavailable

    try:
        from memproc.store.postgres.connection import PgSettings
        from memproc.store.postgres.database import PgStore
    except ImportError as exc:
        raise StorageUnavailable(
            "storage unavailable: a PostgreSQL store needs memproc's `postgres` extra "
            "(pip install 'memproc[postgres]')",
            reason="driver_missing",
        ) from exc
    password = None
    if config.db_password_file:
        try:
            with open(config.db_password_file, encoding="utf-8") as handle:
                password = handle.read().strip()
        except OSError as exc:
            raise StorageUnavailable(
                "storage unavailable: cannot read db_password_file",
                reason="password_file",
                detail=exc.strerror or str(exc),
            ) from exc
    settings = PgSettings(
        pool_size=config.db_pool_size,
        statement_timeout_ms=config.db_statement_timeout_ms,
        lock_timeout_ms=max(config.busy_timeout_ms, config.db_statement_timeout_ms),
    )
    return PgStore(config.db, settings, password)
