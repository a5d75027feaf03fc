"""memproc errors -> JSON-RPC error objects. The only place that does this conversion."""

from __future__ import annotations

import logging

from memproc.errors import InternalError, MemprocError
from memproc.wire.envelope import ErrorObject

log = logging.getLogger("memproc.protocol")


def to_error_object(exc: BaseException) -> ErrorObject:
    """Typed errors keep their code and data; anything else is logged and becomes -32603,
    with no traceback or message text on the wire (it might hold stored content or SQL)."""
    if not isinstance(exc, MemprocError):
        log.error("unexpected failure", exc_info=exc)
        exc = InternalError("internal error")
    elif isinstance(exc, InternalError) and exc.__cause__ is not None:
        # A storage failure mapped to -32603 (store/errors.py): what SQLite said goes to the
        # log, where an operator can see it, and never to the wire.
        log.error("internal failure", exc_info=exc.__cause__)
    return ErrorObject(code=int(exc.code), message=exc.message, data=exc.wire_data())
