"""The one closed hierarchy of memproc errors, and the one table of their codes.

Every layer raises these; only the server's dispatch turns them into JSON-RPC error objects
(`memproc.wire.envelope.ErrorObject`). Keeping the table here, below every folder (and not in
``server/`` or ``wire/``), lets the store raise typed errors without importing either.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, ClassVar


class ErrorCode(IntEnum):
    """Every code memproc puts on the wire: add one here and a class below, nowhere else."""

    PARSE_ERROR = -32700
    INVALID_REQUEST = -32600
    METHOD_NOT_FOUND = -32601
    INVALID_PARAMS = -32602
    INTERNAL_ERROR = -32603
    STORAGE_BUSY = -32000
    NOT_READY = -32001
    NOT_FOUND = -32002
    CONFLICT = -32003
    PERMISSION_DENIED = -32004
    STORAGE_UNAVAILABLE = -32005
    REQUEST_TOO_LARGE = -32010
    OVERLOADED = -32011
    CANCELLED = -32800


class MemprocError(Exception):
    """Base of every error a client can see. Messages never contain stored content or SQL."""

    code: ClassVar[ErrorCode] = ErrorCode.INTERNAL_ERROR
    kind: ClassVar[str] = "internal_error"
    retryable: ClassVar[bool] = False

    def __init__(self, message: str, **data: Any) -> None:
        super().__init__(message)
        self.message = message
        self.data = data

    def wire_data(self) -> dict[str, Any]:
        """The `data` member of the JSON-RPC error: kind and retryable first, then details."""
        return {"kind": self.kind, "retryable": self.is_retryable(), **self.data}

    def is_retryable(self) -> bool:
        return self.retryable


class ParseError(MemprocError):
    code, kind = ErrorCode.PARSE_ERROR, "parse_error"


class InvalidRequest(MemprocError):
    code, kind = ErrorCode.INVALID_REQUEST, "invalid_request"


class MethodNotFound(MemprocError):
    code, kind = ErrorCode.METHOD_NOT_FOUND, "method_not_found"


class InvalidParams(MemprocError):
    """Carries `path`, a JSONPath into the request such as ``$.params.limit``."""

    code, kind = ErrorCode.INVALID_PARAMS, "invalid_params"

    def __init__(self, message: str, path: str = "$.params", **data: Any) -> None:
        super().__init__(message, path=path, **data)


class InternalError(MemprocError):
    code, kind = ErrorCode.INTERNAL_ERROR, "internal_error"


class StorageBusy(MemprocError):
    """The database stayed locked by another writer for longer than the busy timeout."""

    code, kind, retryable = ErrorCode.STORAGE_BUSY, "storage_busy", True


class NotReady(MemprocError):
    """A component (a model) is not available. Retryable while it is still loading."""

    code, kind = ErrorCode.NOT_READY, "not_ready"

    def __init__(self, message: str, *, retryable: bool, **data: Any) -> None:
        super().__init__(message, **data)
        self._retryable = retryable

    def is_retryable(self) -> bool:
        return self._retryable


class NotFound(MemprocError):
    code, kind = ErrorCode.NOT_FOUND, "not_found"


class Conflict(MemprocError):
    code, kind = ErrorCode.CONFLICT, "conflict"


class PermissionDenied(MemprocError):
    code, kind = ErrorCode.PERMISSION_DENIED, "permission_denied"


class StorageUnavailable(MemprocError):
    """The database cannot be used as asked: read-only, full, corrupt or not a database.

    Not retryable as such: an operator has to act. `data.reason` says which.
    """

    code, kind = ErrorCode.STORAGE_UNAVAILABLE, "storage_unavailable"


class RequestTooLarge(MemprocError):
    code, kind = ErrorCode.REQUEST_TOO_LARGE, "request_too_large"


class Overloaded(MemprocError):
    code, kind, retryable = ErrorCode.OVERLOADED, "overloaded", True


class Cancelled(MemprocError):
    """The request was cancelled before anything it would write was committed."""

    code, kind = ErrorCode.CANCELLED, "cancelled"


def error_classes() -> list[type[MemprocError]]:
    """Every concrete error class, one per code (a test holds the table to this). The base is
    left out: it shares -32603 with InternalError and is never raised itself."""
    return MemprocError.__subclasses__()
