"""Running a Runtime-level test module on both stores.

A module that goes through `ctx` / `runtime` overrides its Runtime fixture with one
parametrised by `STORES`, and opens the Runtime on `database(request, db_path)`: an SQLite
file, or a fresh PostgreSQL database. Test bodies stay as they are.
"""

from __future__ import annotations

from typing import Any

import apsw
import pytest

STORES = ["sqlite", "postgres"]


def database(request: pytest.FixtureRequest, db_path: str) -> str:
    """What `Config.db` names for this run: the SQLite file, or a fresh PostgreSQL database."""
    if request.param == "sqlite":
        return db_path
    return str(request.getfixturevalue("pg_url"))


def sql(conn: Any, statement: str) -> str:
    """`statement` written with SQLite's `?` placeholders, as the connection's store takes it
    (for the few tests that read or write a table directly)."""
    return statement if type(conn) is apsw.Connection else statement.replace("?", "%s")
