"""The Store: one writer connection behind a lock, one reader connection per thread.

Why this shape: SQLite allows one writer at a time per file, so writes from this process are
serialised here (and across processes by `BEGIN IMMEDIATE` plus the busy timeout) instead of
colliding inside SQLite. Readers never wait for the writer in WAL mode, so every worker thread
gets its own connection and reads run in parallel (APSW releases the GIL inside SQLite).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import apsw

from memproc.cancel import CancelToken
from memproc.store import path_guard
from memproc.store.connection import ConnectionSettings, open_connection
from memproc.store.errors import storage_errors, storage_unavailable
from memproc.store.migrations import migrate

# How many SQLite virtual-machine steps run between two looks at the cancellation token:
# well under a millisecond of work, and at 1,000 the looks alone cost 3 ms of a broad search.
PROGRESS_STEPS = 10_000

ExecTracer = Callable[[apsw.Cursor, str, object], bool]


class Store:
    def __init__(self, path: str, settings: ConnectionSettings | None = None) -> None:
        self.path = path
        self.settings = settings or ConnectionSettings()
        self._write_lock = threading.Lock()
        self._local = threading.local()
        self._connections: list[apsw.Connection] = []
        self._connections_lock = threading.Lock()
        self._tracers: list[ExecTracer] = []
        self._closed = False
        self._identity: path_guard.FileIdentity | None = None
        with storage_errors():
            path_guard.require_sqlite_file(path)
            self._writer = self._open_writer()
            self._identity = path_guard.identity(path)
            # Fixed for the connection's life: SQLite opens a file whose mode forbids writing
            # read-only (reads work, writes fail), and server.info says so.
            self.read_only = bool(self._writer.readonly("main"))
            try:
                migrate(self._writer)
            except BaseException:
                self.close()  # the caller keeps the error (and so this frame): free the file
                raise

    # -- connections -------------------------------------------------------------------

    def _connect(self) -> apsw.Connection:
        # A reader opened after the file was replaced would see the new file (and, through the
        # old -wal, could even write memproc's pages into it at close): check first.
        self.check_path()
        conn = open_connection(self.path, self.settings)
        conn.set_progress_handler(self._should_interrupt, PROGRESS_STEPS)
        if self._tracers:
            conn.exec_trace = self._trace
        with self._connections_lock:
            self._connections.append(conn)
        return conn

    def _open_writer(self) -> apsw.Connection:
        try:
            return self._connect()
        except apsw.CantOpenError as exc:
            if path_guard.on_read_only_file_system(self.path):
                raise storage_unavailable("read_only") from exc
            raise

    def _reader(self) -> apsw.Connection:
        conn = getattr(self._local, "reader", None)
        if conn is None:
            conn = self._local.reader = self._connect()
        return conn

    def check_path(self) -> None:
        """Raise StorageUnavailable (reason "replaced") unless the path still names the file
        this store opened; see `path_guard` for why."""
        path_guard.require_same_file(self.path, self._identity)

    def _should_interrupt(self) -> bool:
        token: CancelToken | None = getattr(self._local, "token", None)
        return token is not None and token.cancelled

    @contextmanager
    def _bound(self, token: CancelToken | None) -> Iterator[None]:
        """Make `token` the one this thread's progress handler watches."""
        self._local.token = token
        try:
            yield
        finally:
            self._local.token = None

    # -- transactions ------------------------------------------------------------------

    @contextmanager
    def reading(self, token: CancelToken | None = None) -> Iterator[apsw.Connection]:
        """A consistent snapshot for the duration of the block (a deferred read transaction)."""
        with storage_errors(), self._bound(token):
            self.check_path()
            conn = self._reader()
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                self._local.token = None
                if conn.in_transaction:
                    conn.execute("COMMIT")

    @contextmanager
    def writing(self, token: CancelToken | None = None) -> Iterator[apsw.Connection]:
        """One write transaction: all of the block's writes commit together or not at all.

        The token is sealed just before COMMIT, so a cancellation either rolls everything back
        or arrives too late to matter; never half of a write. The path is checked just before
        COMMIT too: a commit into a file that was replaced or deleted would be acknowledged and
        then lost.
        """
        with self._write_lock, storage_errors(self._writer), self._bound(token):
            conn = self._writer
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                self.check_path()
                if token is not None:
                    token.seal()
                conn.execute("COMMIT")
            except BaseException:
                self._local.token = None
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise

    def checkpoint(self) -> bool:
        """Copy the WAL into the database and truncate it (after a purge, so that no page
        image of purged content outlives the commit in the -wal file). False when a reader,
        here or in another process, kept it from completing: the next checkpoint finishes."""
        with self._write_lock, storage_errors():
            try:
                self._writer.wal_checkpoint(mode=apsw.SQLITE_CHECKPOINT_TRUNCATE)
            except apsw.BusyError:
                return False
            return True

    def reclaim(self) -> list[str]:
        """After a purge, make sure no old copy of purged content is left in the files: on
        SQLite every connection sets `secure_delete` (freed cells are zeroed in the same
        transaction), so what is left is the WAL, which this checkpoints and truncates.
        Returns what was reclaimed beyond that: nothing (PostgreSQL lists its tables)."""
        if not self.checkpoint():
            from memproc.errors import StorageBusy

            raise StorageBusy("a reader kept the WAL checkpoint from completing; retry")
        return []

    # -- tests and maintenance -----------------------------------------------------------

    def add_tracer(self, tracer: ExecTracer) -> None:
        """Call `tracer(cursor, sql, bindings)` for every statement on every connection."""
        self._tracers.append(tracer)
        with self._connections_lock:
            for conn in self._connections:
                conn.exec_trace = self._trace

    def _trace(self, cursor: apsw.Cursor, sql: str, bindings: object) -> bool:
        for tracer in self._tracers:
            tracer(cursor, sql, bindings)
        return True

    def integrity_check(self) -> list[str]:
        with self.reading() as conn:
            return [row[0] for row in conn.execute("PRAGMA integrity_check")]

    def close(self) -> None:
        with self._write_lock, self._connections_lock:
            if self._closed:
                return
            self._closed = True
            for conn in self._connections:
                conn.close()
            self._connections.clear()
