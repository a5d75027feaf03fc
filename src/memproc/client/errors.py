"""What the client raises.

An error the server answered is raised as memproc's own class for its code (`NotFound`,
`Overloaded`...; the one table is `memproc.errors`), so `except memproc.errors.NotFound`
reads the same in a harness as in the service, and `code`, `kind`, `is_retryable()`, `message`
and `data` (the wire `data` without `kind` and `retryable`) are there. A code the table does
not know (a newer server) is an `UnknownError`. What the client itself detects derives from
`ClientError`: no answer in time (`Timeout`), no server any more (`ServerGone`), or an answer
that breaks the protocol (`ProtocolError`).
"""

from __future__ import annotations

from typing import Any

from memproc.errors import (
    Cancelled,
    Conflict,
    ErrorCode,
    InternalError,
    InvalidParams,
    InvalidRequest,
    MemprocError,
    MethodNotFound,
    NotFound,
    NotReady,
    Overloaded,
    ParseError,
    PermissionDenied,
    RequestTooLarge,
    StorageBusy,
    StorageUnavailable,
    error_classes,
)

__all__ = [
    "REMOTE_ERRORS",
    "Cancelled",
    "ClientError",
    "Conflict",
    "ErrorCode",
    "InternalError",
    "InvalidParams",
    "InvalidRequest",
    "MemprocError",
    "MethodNotFound",
    "NotFound",
    "NotReady",
    "Overloaded",
    "ParseError",
    "PermissionDenied",
    "ProtocolError",
    "RemoteError",
    "RequestTooLarge",
    "ServerGone",
    "StorageBusy",
    "StorageUnavailable",
    "Timeout",
    "UnknownError",
    "is_retryable",
    "remote_error",
]

_BY_CODE: dict[int, type[MemprocError]] = {cls.code: cls for cls in error_classes()}


class ClientError(Exception):
    """Base of the failures the client detects itself, as opposed to errors the server sent."""


class Timeout(ClientError, TimeoutError):
    """No answer within the call's deadline. The client has sent `$/cancelRequest` for it and
    dropped whatever answer comes later, so a write may or may not have been applied."""

    def __init__(self, method: str, request_id: int | str | None, timeout: float | None) -> None:
        super().__init__(f"{method} (id {request_id}) got no answer within {timeout} s")
        self.method = method
        self.request_id = request_id
        self.timeout = timeout


class ServerGone(ClientError, ConnectionError):
    """The server's output ended (the process exited, was killed, or the client was closed)
    before the answer came. `exit_status` is the process's (negative: killed by that signal;
    None: unknown or not a process), `stderr_tail` the end of what it wrote to stderr."""

    def __init__(
        self, reason: str, *, exit_status: int | None = None, stderr_tail: str = ""
    ) -> None:
        status = "" if exit_status is None else f" (exit status {exit_status})"
        tail = f"\n--- stderr (tail) ---\n{stderr_tail}" if stderr_tail else ""
        super().__init__(f"{reason}{status}{tail}")
        self.reason = reason
        self.exit_status = exit_status
        self.stderr_tail = stderr_tail


class ProtocolError(ClientError):
    """The server sent an answer the client cannot use (a result that does not decode into
    the method's result type)."""


class UnknownError(ClientError):
    """An error response whose code is not in memproc's table, with what it said of itself."""

    def __init__(self, code: int, message: str, data: dict[str, Any]) -> None:
        super().__init__(f"{message} (code {code})")
        self.code = code
        self.message = message
        self.kind = str(data.get("kind", "unknown"))
        self.retryable = data.get("retryable") is True
        self.data = {k: v for k, v in data.items() if k not in ("kind", "retryable")}


RemoteError = MemprocError | UnknownError
REMOTE_ERRORS = (MemprocError, UnknownError)  # for `except`


def remote_error(code: int, message: str, data: dict[str, Any]) -> RemoteError:
    """The exception for an error response: memproc's class for `code`, built as the server
    built it (so `data` holds the same details), or an `UnknownError`."""
    cls = _BY_CODE.get(code)
    if cls is None:
        return UnknownError(code, message, data)
    details = {k: v for k, v in data.items() if k not in ("kind", "retryable")}
    # Only NotReady takes its retryability from the wire; every other class has it fixed.
    extra = {"retryable": data.get("retryable") is True} if cls is NotReady else {}
    try:
        return cls(message, **extra, **details)
    except TypeError:  # a detail named like a constructor argument: keep it as data anyway
        error = cls(message, **extra)
        error.data = details
        return error


def is_retryable(error: BaseException) -> bool:
    """Whether the server said that the same request may succeed later (nothing was applied)."""
    if isinstance(error, MemprocError):
        return error.is_retryable()
    return isinstance(error, UnknownError) and error.retryable
