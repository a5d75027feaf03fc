"""A transaction's connection as the PostgreSQL twins see it, and how each pooled connection is
set up.

The twins take a `PgConnection`, never a bare psycopg connection: it is how `store.routing`
knows which store a call is for, and it looks at the request's cancellation token before each
statement (the SQLite store's progress handler does the same between VM steps), so a cancelled
request stops at the next statement and its transaction rolls back.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import psycopg
from psycopg.adapt import Dumper, Loader
from psycopg.types import TypeInfo

from memproc.cancel import CancelToken
from memproc.errors import Cancelled

Params = Sequence[Any] | dict[str, Any] | None


@dataclass(frozen=True)
class PgSettings:
    """How memproc uses the server. `statement_timeout_ms` bounds every statement (0: none)."""

    pool_size: int = 8
    connect_timeout_s: float = 10.0
    statement_timeout_ms: int = 30_000
    lock_timeout_ms: int = 30_000


class PgConnection:
    __slots__ = ("raw", "token")

    def __init__(self, raw: psycopg.Connection[Any], token: CancelToken | None = None) -> None:
        self.raw = raw
        self.token = token

    def execute(self, sql: str, params: Params = None, *, binary: bool = False) -> Any:
        """Run one statement; returns the cursor (fetchone, fetchall, iteration)."""
        if self.token is not None and self.token.cancelled:
            raise Cancelled("request cancelled")
        return self.raw.execute(sql, params, binary=binary)

    def executemany(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        if self.token is not None and self.token.cancelled:
            raise Cancelled("request cancelled")
        with self.raw.cursor() as cursor:
            cursor.executemany(sql, rows)


# -- pgvector's binary format: float32 bytes in, float32 bytes out, no numpy ---------------------


class Vector(bytes):
    """float32 little-endian bytes (what the rest of memproc passes around) bound as a pgvector
    `vector`: wrap a value in Vector(...) to send it as one."""


class _VectorDumper(Dumper):
    format = psycopg.pq.Format.BINARY

    def dump(self, obj: bytes) -> bytes:
        # pgvector's binary form: dimensions and a reserved word (int16 each), then big-endian
        # float4s.
        count = len(obj) // 4
        values = struct.unpack(f"<{count}f", obj)
        return struct.pack(f">HH{count}f", count, 0, *values)


class _VectorLoader(Loader):
    format = psycopg.pq.Format.BINARY

    def load(self, data: Any) -> bytes:
        count, _ = struct.unpack_from(">HH", data)
        values = struct.unpack_from(f">{count}f", data, 4)
        return struct.pack(f"<{count}f", *values)


def register_vector_type(conn: psycopg.Connection[Any]) -> None:
    """Teach this connection the `vector` type (its oid differs from database to database)."""
    info = TypeInfo.fetch(conn, "vector")
    if info is None:
        return  # not created yet: the schema migration creates it, then reconnects
    dumper = type("VectorDumper", (_VectorDumper,), {"oid": info.oid})
    conn.adapters.register_dumper(Vector, dumper)
    conn.adapters.register_loader(info.oid, _VectorLoader)
