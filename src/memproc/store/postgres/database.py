"""The PostgreSQL store: the same transactions as the SQLite Store, over a connection pool.

Why writes take one advisory lock: the SQLite store serialises every write (one writer per file,
`BEGIN IMMEDIATE` across processes), and every guarantee above it (idempotent client tokens,
conditional checkpoint saves, revision numbers, the vector journal's order, the lexical counts)
was written for that. Taking a transaction-level advisory lock at the start of each write gives
the same serial order across every process on every host, with no serialization failures to
retry and no lost updates; reads never take it and see a consistent snapshot (REPEATABLE READ).
Identity values are drawn under the lock too, so they grow in commit order, which the in-memory
vector copy's journal relies on.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from memproc.cancel import CancelToken
from memproc.store.postgres.connection import PgConnection, PgSettings, register_vector_type
from memproc.store.postgres.errors import server_unavailable, storage_errors
from memproc.store.postgres.migrations import migrate
from memproc.store.quoting import quote_identifier

# The tables whose rows a purge updates or deletes (and so leaves old versions of) besides the
# embedders' vector tables: what `reclaim` rewrites.
PURGED_TABLES = (
    "memories",
    "memory_revisions",
    "memory_events",
    "citations",
    "lexical_terms",
    "vector_rows",
    "memory_embeddings",
)
# The transaction-level advisory lock every write holds (any 64-bit key unique to memproc).
WRITE_LOCK = 0x6D656D70726F6302
_IDLE = psycopg.pq.TransactionStatus.IDLE


def redact(url: str) -> str:
    """The URL without its password, for logs, `server.info` and errors."""
    try:
        parts = conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://(unparseable url)"
    host, port, name = parts.get("host", ""), parts.get("port", ""), parts.get("dbname", "")
    user = parts.get("user")
    who = f"{user}@" if user else ""
    where = f"{host}:{port}" if port else str(host)
    return f"postgresql://{who}{where}/{name}"


class PgStore:
    """`password`: from the environment or a password file, never from the URL in logs."""

    def __init__(self, url: str, settings: PgSettings | None = None, password: str | None = None):
        self.path = redact(url)
        self.settings = settings or PgSettings()
        self.read_only = False
        self._closed = False
        self._lock = threading.Lock()
        self._conninfo = _conninfo(url, password, self.settings)
        with storage_errors():
            with self._first_connection() as conn:
                migrate(conn)
            self._pool = ConnectionPool(
                self._conninfo,
                min_size=1,
                max_size=self.settings.pool_size,
                kwargs={"autocommit": True},
                configure=register_vector_type,
                open=False,
                name="memproc",
            )
            self._pool.open(wait=True, timeout=self.settings.connect_timeout_s)

    def _first_connection(self) -> psycopg.Connection[Any]:
        """A first connection, failing fast with libpq's reason (never the password) when the
        server cannot be reached or refuses us: the pool alone would only time out."""
        try:
            return psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.OperationalError as exc:
            reason = _first_line(str(exc))
            if "password" in reason or "authentication" in reason:
                raise server_unavailable("not_authorized", reason) from exc
            raise server_unavailable("unreachable", reason) from exc

    # -- transactions ------------------------------------------------------------------

    @contextmanager
    def reading(self, token: CancelToken | None = None) -> Iterator[PgConnection]:
        """A consistent snapshot for the duration of the block."""
        with self._transaction(token, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") as conn:
            yield conn

    @contextmanager
    def writing(self, token: CancelToken | None = None) -> Iterator[PgConnection]:
        """One write transaction, in the one serial order of all writers (see the module's
        docstring). The token is sealed just before COMMIT, as in the SQLite store."""
        with self._transaction(token, "BEGIN ISOLATION LEVEL READ COMMITTED", write=True) as conn:
            yield conn

    @contextmanager
    def _transaction(
        self, token: CancelToken | None, begin: str, write: bool = False
    ) -> Iterator[PgConnection]:
        cancelled = (lambda: token.cancelled) if token is not None else bool
        with storage_errors(cancelled), self._pool.connection() as raw, _cancels(token, raw):
            # One round trip for both: a statement without parameters may hold several.
            raw.execute(f"{begin}; SELECT pg_advisory_xact_lock({WRITE_LOCK})" if write else begin)
            try:
                yield PgConnection(raw, token)
                if write and token is not None:
                    token.seal()
                raw.execute("COMMIT")
            except BaseException:
                if (
                    not raw.closed
                    and raw.info.transaction_status != psycopg.pq.TransactionStatus.IDLE
                ):
                    raw.execute("ROLLBACK")
                raise

    # -- what the SQLite store also offers ------------------------------------------------

    def check_path(self) -> None:
        """Nothing to check: there is no file that could be replaced under us."""

    def checkpoint(self) -> bool:
        """Nothing to copy: PostgreSQL's WAL is the server's (see the README on purging)."""
        return True

    def integrity_check(self) -> list[str]:
        """What the database's own state reveals to be wrong (["ok"] when nothing): each row's
        lexical vector against its text, and the lexical counts against the rows."""
        from memproc.store.postgres.maintenance import lexical_problems

        with self.reading() as conn:
            return lexical_problems(conn) or ["ok"]

    def reclaim(self) -> list[str]:
        """Rewrite the tables a purge touches (VACUUM FULL), so that the old row versions
        holding purged content leave the table and index files; the tables rewritten.

        Why FULL: a plain VACUUM marks dead row versions' space free for reuse but leaves
        their bytes in the page until something overwrites them (the tests read the files and
        find them). VACUUM FULL writes each table and its indexes anew and drops the old files;
        it holds an exclusive lock on each table while it copies it, so readers and writers of
        that table wait (up to the lock timeout) meanwhile. VACUUM cannot run inside a
        transaction: it runs on a connection of its own, without the statement timeout."""
        from memproc.store import vectors

        with storage_errors(), psycopg.connect(self._conninfo, autocommit=True) as raw:
            register_vector_type(raw)
            raw.execute("SET statement_timeout = 0")
            tables = [*PURGED_TABLES, *(e.table for e in vectors.all_embedders(PgConnection(raw)))]
            for table in tables:
                raw.execute(f"VACUUM (FULL, ANALYZE) {quote_identifier(table)}")
        return tables

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if hasattr(self, "_pool"):
            self._pool.close()


@contextmanager
def _cancels(token: CancelToken | None, raw: psycopg.Connection[Any]) -> Iterator[None]:
    """While the block runs, cancelling the token cancels the statement the connection is
    running on the server (which then fails with QueryCanceled, read as Cancelled): the
    SQLite store's progress handler does the same between VM steps."""
    if token is None:
        yield
        return
    forget = token.on_cancel(raw.cancel_safe)
    try:
        yield
    finally:
        forget()


def _conninfo(url: str, password: str | None, settings: PgSettings) -> str:
    options = (
        f"-c statement_timeout={settings.statement_timeout_ms} "
        f"-c lock_timeout={settings.lock_timeout_ms}"
    )
    extra: dict[str, Any] = {
        "connect_timeout": max(1, int(settings.connect_timeout_s)),
        "options": options,
        "application_name": "memproc",
    }
    if password is not None:
        extra["password"] = password
    try:
        return make_conninfo(url, **extra)
    except psycopg.ProgrammingError as exc:
        raise server_unavailable("bad_url", "the database URL cannot be parsed") from exc


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else "unknown"
