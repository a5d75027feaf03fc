"""The viewer's JSON endpoints: `/api/<method>` runs the op behind the protocol method of that
name, with its params decoded into the same wire type and so with the same validation and
errors. The table below is the whole of what the page may do; the one write is
`procedure.review.decide`, and only by POST.

Query strings carry text: numbers and booleans are converted by msgspec's lax mode, and a
parameter that is a list on the wire (`kinds`) is the repeated query parameter.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec

from memproc.errors import (
    Conflict,
    InvalidParams,
    MemprocError,
    NotFound,
    NotReady,
    PermissionDenied,
    StorageBusy,
    StorageUnavailable,
)
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.evidence import evidence as evidence_ops
from memproc.ops.memories import memory as memory_ops
from memproc.ops.memories import revisions as revision_ops
from memproc.ops.procedures import procedures as procedure_ops
from memproc.ops.procedures import review as review_ops
from memproc.runtime import Runtime
from memproc.wire import evidence_messages as em
from memproc.wire import messages as m
from memproc.wire import procedure_messages as pm

log = logging.getLogger("memproc.ui")


@dataclass(frozen=True)
class Endpoint:
    params: type[msgspec.Struct]
    handler: Callable[[OpContext, Any], msgspec.Struct]
    writes: bool = False


ENDPOINTS: Mapping[str, Endpoint] = {
    "memory.list": Endpoint(m.ListParams, memory_ops.list_memories),
    "memory.search": Endpoint(m.SearchParams, search_ops.search),
    "memory.get": Endpoint(m.GetParams, memory_ops.get),
    "memory.history": Endpoint(m.HistoryParams, revision_ops.history),
    "evidence.list": Endpoint(em.EvidenceListParams, evidence_ops.list_evidence),
    "procedure.list": Endpoint(pm.ListProceduresParams, procedure_ops.list_procedures),
    "procedure.get": Endpoint(pm.GetProcedureParams, procedure_ops.get),
    "procedure.audit": Endpoint(pm.AuditParams, review_ops.audit),
    "procedure.review.list": Endpoint(pm.ReviewListParams, review_ops.review_list),
    "procedure.review.decide": Endpoint(
        pm.ReviewDecideParams, review_ops.review_decide, writes=True
    ),
}
# The wire's list-valued params that a query string may give (as a repeated parameter).
LIST_PARAMS = frozenset({"kinds", "scopes"})

# HTTP status of each error class; anything else is a 500 (the page shows the kind).
STATUS = {
    InvalidParams: 400,
    PermissionDenied: 403,
    NotFound: 404,
    Conflict: 409,
    NotReady: 503,
    StorageBusy: 503,
    StorageUnavailable: 503,
}


class Answer(msgspec.Struct, frozen=True):
    """An HTTP status and the JSON body to send with it."""

    status: int
    body: bytes


class Api:
    """Runs endpoints against one runtime; every call gets its own OpContext, as each
    request of the service does."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def call(self, method: str, raw: Mapping[str, Any], *, post: bool) -> Answer:
        endpoint = ENDPOINTS.get(method)
        if endpoint is None:
            return _error(404, "not_found", f"no endpoint {method}")
        if endpoint.writes != post:
            return _error(405, "method_not_allowed", f"{method} needs {_verb(endpoint)}")
        try:
            params = msgspec.convert(raw, endpoint.params, strict=post)
            result = endpoint.handler(OpContext(runtime=self.runtime), params)
        except msgspec.ValidationError as exc:
            return _error(400, "invalid_params", str(exc))
        except MemprocError as exc:
            return _error(STATUS.get(type(exc), 500), exc.kind, exc.message, exc.data)
        except Exception:  # a bug: logged with its traceback, answered without one
            log.exception("endpoint failed", extra={"method": method})
            return _error(500, "internal_error", "internal error")
        return Answer(200, msgspec.json.encode(result))

    def scopes(self) -> Answer:
        """Every scope that holds a record: what the page offers to browse."""
        from memproc.store import transfer

        try:
            with self.runtime.store().reading() as conn:
                found = transfer.scopes(conn)
        except MemprocError as exc:
            return _error(STATUS.get(type(exc), 500), exc.kind, exc.message, exc.data)
        return Answer(200, msgspec.json.encode({"scopes": found}))


def query_params(query: Mapping[str, Sequence[str]]) -> dict[str, Any]:
    """A parsed query string as wire params: the last value of each, a list for list params."""
    return {
        name: list(values) if name in LIST_PARAMS else values[-1]
        for name, values in query.items()
        if values
    }


def _verb(endpoint: Endpoint) -> str:
    return "POST" if endpoint.writes else "GET"


def _error(status: int, kind: str, message: str, data: Mapping[str, Any] | None = None) -> Answer:
    body = {"error": {"kind": kind, "message": message, "data": dict(data or {})}}
    return Answer(status, msgspec.json.encode(body))
