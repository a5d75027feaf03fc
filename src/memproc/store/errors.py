"""The one place where APSW's exceptions become memproc errors.

Every `apsw.Error` subclass is listed explicitly (a test walks them), so a new SQLite failure
mode never reaches a client as an untyped crash or with SQL in its message.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import apsw

from memproc.errors import (
    Cancelled,
    Conflict,
    InternalError,
    MemprocError,
    RequestTooLarge,
    StorageBusy,
    StorageUnavailable,
)

# What an operator should read for each reason; the rest say just the reason in words.
UNAVAILABLE_MESSAGES = {
    "disk_full": "the disk is full (or the file size limit or quota is reached)",
    "read_only": "the database is read-only: its file, its directory or the file system",
    "cannot_open": "cannot open the database file: does its directory exist, and may memproc "
    "read it and add files to it?",
    "not_a_database": "the file at the database path is not an SQLite database; memproc left "
    "it untouched",
    "corrupt": "the database file is damaged",
    "replaced": "the database file was moved, replaced or deleted while memproc had it open; "
    "restart memproc to open whatever is at the path now",
}

# The errno behind an SQLITE_IOERR that means "no room", which SQLite reports as SQLITE_FULL
# only for ENOSPC: a quota (EDQUOT) or `ulimit -f` (EFBIG) would otherwise read "io error".
NO_ROOM_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def storage_unavailable(reason: str) -> StorageUnavailable:
    words = UNAVAILABLE_MESSAGES.get(reason, reason.replace("_", " "))
    return StorageUnavailable(f"storage unavailable: {words}", reason=reason)


def _unavailable(reason: str) -> Callable[[], MemprocError]:
    return lambda: storage_unavailable(reason)


def _internal() -> MemprocError:
    return InternalError("internal storage error")


APSW_ERROR_MAP: dict[type[apsw.Error], Callable[[], MemprocError]] = {
    apsw.BusyError: lambda: StorageBusy("database is busy; retry"),
    apsw.LockedError: lambda: StorageBusy("database table is locked; retry"),
    apsw.InterruptError: lambda: Cancelled("request cancelled"),
    apsw.ConstraintError: lambda: Conflict("the write conflicts with stored data"),
    apsw.TooBigError: lambda: RequestTooLarge("value too large for storage"),
    apsw.FullError: _unavailable("disk_full"),
    apsw.ReadOnlyError: _unavailable("read_only"),
    apsw.PermissionsError: _unavailable("permission_denied"),
    apsw.CantOpenError: _unavailable("cannot_open"),
    apsw.AuthError: _unavailable("not_authorized"),
    apsw.CorruptError: _unavailable("corrupt"),
    apsw.NotADBError: _unavailable("not_a_database"),
    apsw.FormatError: _unavailable("corrupt"),
    apsw.IOError: _unavailable("io_error"),
    apsw.NoMemError: _unavailable("out_of_memory"),
    apsw.NoLFSError: _unavailable("large_files_unsupported"),
    apsw.ProtocolError: _unavailable("locking_protocol"),
    apsw.ExtensionLoadingError: _unavailable("extension_not_loaded"),
    apsw.NoFTS5Error: _unavailable("fts5_missing"),
    apsw.AbortError: _internal,
    apsw.BindingsError: _internal,
    apsw.ConnectionClosedError: _internal,
    apsw.ConnectionNotClosedError: _internal,
    apsw.CursorClosedError: _internal,
    apsw.EmptyError: _internal,
    apsw.ExecutionCompleteError: _internal,
    apsw.ExecTraceAbort: _internal,
    apsw.ForkingViolationError: _internal,
    apsw.IncompleteExecutionError: _internal,
    apsw.InternalError: _internal,
    apsw.InvalidContextError: _internal,
    apsw.MismatchError: _internal,
    apsw.MisuseError: _internal,
    apsw.NotFoundError: _internal,
    apsw.RangeError: _internal,
    apsw.SQLError: _internal,
    apsw.SchemaChangeError: _internal,
    apsw.ThreadingViolationError: _internal,
    apsw.VFSFileClosedError: _internal,
    apsw.VFSNotImplementedError: _internal,
    apsw.Error: _internal,
}


def map_apsw_error(exc: apsw.Error, system_errno: int = 0) -> MemprocError:
    """`system_errno`: the OS error behind it, when the connection that failed is known."""
    if isinstance(exc, apsw.IOError) and system_errno in NO_ROOM_ERRNOS:
        return storage_unavailable("disk_full")
    for cls in type(exc).__mro__:
        factory = APSW_ERROR_MAP.get(cls)
        if factory is not None:
            return factory()
    return _internal()


@contextmanager
def storage_errors(conn: apsw.Connection | None = None) -> Iterator[None]:
    """Re-raise any APSW exception as its memproc error, keeping the original as the cause.
    Given the connection the block uses, an I/O error can say whether the disk was full."""
    try:
        yield
    except apsw.Error as exc:
        raise map_apsw_error(exc, _system_errno(conn)) from exc


def _system_errno(conn: apsw.Connection | None) -> int:
    try:
        return 0 if conn is None else conn.system_errno
    except apsw.Error:  # a closed connection has none
        return 0
