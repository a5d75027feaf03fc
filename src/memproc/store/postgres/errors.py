"""The one place where psycopg's exceptions become memproc errors, as store/errors.py does for
APSW: the same error table, so a client cannot tell from an error which store is behind it.

Classes are matched by SQLSTATE class first and then by the exception's type, most specific
first; anything unknown is an internal error whose message never carries SQL or a server
message (the original stays the cause, for the log).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import psycopg
from psycopg import errors as pg

from memproc.errors import (
    Cancelled,
    Conflict,
    InternalError,
    InvalidParams,
    MemprocError,
    RequestTooLarge,
    StorageBusy,
    StorageUnavailable,
)
from memproc.store.errors import UNAVAILABLE_MESSAGES, storage_unavailable

# Extra reasons only a server store has; the rest read as in store/errors.py.
SERVER_MESSAGES = {
    "unreachable": "cannot reach the PostgreSQL server",
    "schema_too_new": "the database was written by a newer memproc",
    "extension_missing": "the PostgreSQL server lacks the pgvector extension (`vector`)",
}


def server_unavailable(reason: str, detail: str | None = None) -> StorageUnavailable:
    words = (
        SERVER_MESSAGES.get(reason) or UNAVAILABLE_MESSAGES.get(reason) or reason.replace("_", " ")
    )
    extra = {} if detail is None else {"detail": detail}
    return StorageUnavailable(f"storage unavailable: {words}", reason=reason, **extra)


def _busy(what: str) -> Callable[[], MemprocError]:
    return lambda: StorageBusy(f"{what}; retry")


# Most specific first: the first class the exception is an instance of decides.
PSYCOPG_ERROR_MAP: tuple[tuple[type[psycopg.Error], Callable[[], MemprocError]], ...] = (
    (pg.SerializationFailure, _busy("the write conflicted with a concurrent one")),
    (pg.DeadlockDetected, _busy("the write conflicted with a concurrent one")),
    (pg.LockNotAvailable, _busy("the database is busy")),
    (pg.QueryCanceled, lambda: StorageBusy("the statement timed out; retry")),
    (pg.AdminShutdown, _busy("the database server is shutting down")),
    (pg.CannotConnectNow, _busy("the database server is starting up")),
    (pg.TooManyConnections, _busy("the database server has no free connection")),
    (pg.IntegrityError, lambda: Conflict("the write conflicts with stored data")),
    (pg.ProgramLimitExceeded, lambda: RequestTooLarge("value too large for storage")),
    (pg.DiskFull, lambda: storage_unavailable("disk_full")),
    (pg.OutOfMemory, lambda: storage_unavailable("out_of_memory")),
    (pg.ReadOnlySqlTransaction, lambda: storage_unavailable("read_only")),
    (pg.InsufficientPrivilege, lambda: storage_unavailable("permission_denied")),
    (pg.InvalidPassword, lambda: storage_unavailable("not_authorized")),
    (pg.InvalidAuthorizationSpecification, lambda: storage_unavailable("not_authorized")),
    (pg.DataCorrupted, lambda: storage_unavailable("corrupt")),
    # A lost or broken connection: the pool replaces it, so the next attempt may succeed.
    (psycopg.OperationalError, _busy("the connection to the database was lost")),
    (psycopg.InterfaceError, _busy("the connection to the database was lost")),
)


def _holds_nul(exc: psycopg.Error) -> bool:
    """psycopg refuses, before sending, a text value holding U+0000: PostgreSQL's text type
    cannot store it (SQLite's can). The value is the client's, so the error is theirs."""
    return type(exc) is psycopg.DataError and "NUL" in str(exc)


def map_psycopg_error(exc: psycopg.Error) -> MemprocError:
    if _holds_nul(exc):
        return InvalidParams(
            "a text value holds the character U+0000, which the PostgreSQL store cannot hold",
            reason="nul_character",
        )
    for cls, factory in PSYCOPG_ERROR_MAP:
        if isinstance(exc, cls):
            return factory()
    return InternalError("internal storage error")


@contextmanager
def storage_errors(cancelled: Callable[[], bool] = bool) -> Iterator[None]:
    """Re-raise any psycopg exception as its memproc error, keeping the original as the cause.
    A statement cancelled because the request was (`cancelled()` true) reads as Cancelled."""
    try:
        yield
    except pg.QueryCanceled as exc:
        if cancelled():
            raise Cancelled("request cancelled") from exc
        raise map_psycopg_error(exc) from exc
    except psycopg.Error as exc:
        raise map_psycopg_error(exc) from exc
