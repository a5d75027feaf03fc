"""The one explicit method table: wire name -> params type, result type, handler.

Entries name their types and handlers as "module:attribute" and import them on first use: the
reader answers `ping` before any handler, the gate, the store or numpy is imported, so start-up
pays only for the names. A test holds this table, the request union's tags and the files in
`schemas/` to each other, and imports every entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memproc.ops.context import OpContext
    from memproc.wire.messages import MethodInfo, Params, Result

Ref = str | Any  # "module:attribute", or the object itself (tests build entries that way)


def _resolve(ref: Ref) -> Any:
    if not isinstance(ref, str):
        return ref
    module, _, attribute = ref.partition(":")
    return getattr(importlib.import_module(module), attribute)


class Method:
    """One method. `params`, `result` and `handler` are imported when first asked for."""

    __slots__ = ("_refs", "_resolved", "inline", "name", "writes")

    def __init__(
        self,
        name: str,
        params: Ref,
        result: Ref,
        handler: Ref,
        *,
        inline: bool = False,
        writes: bool = False,
    ) -> None:
        self.name = name
        self._refs = {"params": params, "result": result, "handler": handler}
        self._resolved: dict[str, Any] = {}
        # Inline methods run on the reader thread, ahead of any queue: they must be instant and
        # touch no storage, so that ping answers at once however busy the workers are.
        self.inline = inline
        # Whether the method changes stored state: within a scope a write waits for every
        # request sent before it, a read only for the writes before it (memproc.server.ordering).
        self.writes = writes

    def _get(self, part: str) -> Any:
        value = self._resolved.get(part)
        if value is None:
            value = self._resolved[part] = _resolve(self._refs[part])
        return value

    @property
    def params(self) -> type[Params]:
        return self._get("params")

    @property
    def result(self) -> type[Result]:
        return self._get("result")

    @property
    def handler(self) -> Callable[[OpContext, Any], Result]:
        return self._get("handler")

    def with_handler(self, handler: Callable[[OpContext, Any], Result]) -> Method:
        """The same method with another handler (test servers wrap handlers this way)."""
        refs = self._refs
        return Method(
            self.name,
            refs["params"],
            refs["result"],
            handler,
            inline=self.inline,
            writes=self.writes,
        )


# Where the entries live, so each line names only what differs.
M = "memproc.wire.messages:"
CM = "memproc.wire.checkpoint_messages:"
XM = "memproc.wire.context_messages:"
EM = "memproc.wire.evidence_messages:"
PM = "memproc.wire.procedure_messages:"
OPS = "memproc.ops."
MEMORIES = OPS + "memories."
PROCEDURES = OPS + "procedures."
EVIDENCE = OPS + "evidence."
SESSION = "memproc.server.session_methods:"

METHODS: tuple[Method, ...] = (
    Method(
        "initialize",
        M + "InitializeParams",
        M + "InitializeResult",
        SESSION + "initialize",
        inline=True,
    ),
    Method("ping", M + "PingParams", M + "PingResult", SESSION + "ping", inline=True),
    Method(
        "server.info",
        M + "ServerInfoParams",
        M + "ServerInfoResult",
        SESSION + "server_info",
        inline=True,
    ),
    Method(
        "$/cancelRequest",
        M + "CancelParams",
        M + "CancelResult",
        SESSION + "cancel_request",
        inline=True,
    ),
    Method(
        "notifications/cancelled",
        M + "CancelledNotificationParams",
        M + "CancelResult",
        SESSION + "cancelled_notification",
        inline=True,
    ),
    Method(
        "memory.remember",
        M + "RememberParams",
        M + "RememberResult",
        MEMORIES + "memory:remember",
        writes=True,
    ),
    Method(
        "memory.remember_batch",
        M + "RememberBatchParams",
        M + "RememberBatchResult",
        MEMORIES + "memory:remember_batch",
        writes=True,
    ),
    Method("memory.get", M + "GetParams", M + "GetResult", MEMORIES + "memory:get"),
    Method("memory.list", M + "ListParams", M + "ListResult", MEMORIES + "memory:list_memories"),
    Method(
        "memory.forget",
        M + "ForgetParams",
        M + "ForgetResult",
        MEMORIES + "memory:forget",
        writes=True,
    ),
    Method("memory.search", M + "SearchParams", M + "SearchResult", OPS + "search:search"),
    Method(
        "memory.feedback",
        M + "FeedbackParams",
        M + "FeedbackResult",
        MEMORIES + "memory:feedback",
        writes=True,
    ),
    Method(
        "memory.edit",
        M + "EditParams",
        M + "EditResult",
        MEMORIES + "revisions:edit",
        writes=True,
    ),
    Method(
        "memory.history",
        M + "HistoryParams",
        M + "HistoryResult",
        MEMORIES + "revisions:history",
    ),
    Method(
        "memory.challenge",
        M + "ChallengeParams",
        M + "TransitionResult",
        MEMORIES + "lifecycle:challenge",
        writes=True,
    ),
    Method(
        "memory.resolve",
        M + "ResolveParams",
        M + "TransitionResult",
        MEMORIES + "lifecycle:resolve",
        writes=True,
    ),
    Method(
        "memory.supersede",
        M + "SupersedeParams",
        M + "TransitionResult",
        MEMORIES + "lifecycle:supersede",
        writes=True,
    ),
    Method(
        "memory.invalidate",
        M + "InvalidateParams",
        M + "TransitionResult",
        MEMORIES + "lifecycle:invalidate",
        writes=True,
    ),
    Method(
        "memory.purge",
        M + "PurgeParams",
        M + "PurgeResult",
        MEMORIES + "lifecycle:purge",
        writes=True,
    ),
    Method(
        "evidence.put",
        EM + "EvidencePutParams",
        EM + "EvidencePutResult",
        EVIDENCE + "evidence:put",
        writes=True,
    ),
    Method(
        "evidence.get",
        EM + "EvidenceGetParams",
        EM + "EvidenceGetResult",
        EVIDENCE + "evidence:get",
    ),
    Method(
        "evidence.list",
        EM + "EvidenceListParams",
        EM + "EvidenceListResult",
        EVIDENCE + "evidence:list_evidence",
    ),
    Method(
        "checkpoint.save",
        CM + "CheckpointSaveParams",
        CM + "CheckpointSaveResult",
        OPS + "checkpoints:save",
        writes=True,
    ),
    Method(
        "checkpoint.get",
        CM + "CheckpointGetParams",
        CM + "CheckpointGetResult",
        OPS + "checkpoints:get",
    ),
    Method(
        "checkpoint.list",
        CM + "CheckpointListParams",
        CM + "CheckpointListResult",
        OPS + "checkpoints:list_checkpoints",
    ),
    Method(
        "checkpoint.clear",
        CM + "CheckpointClearParams",
        CM + "CheckpointClearResult",
        OPS + "checkpoints:clear",
        writes=True,
    ),
    Method(
        "context.get",
        XM + "ContextGetParams",
        XM + "ContextGetResult",
        OPS + "project_context:get",
    ),
    *(
        Method(
            "procedure.create",
            PM + "CreateProcedureParams",
            PM + "CreateProcedureResult",
            PROCEDURES + "procedures:create",
            writes=True,
        ),
        Method(
            "procedure.get",
            PM + "GetProcedureParams",
            PM + "GetProcedureResult",
            PROCEDURES + "procedures:get",
        ),
        Method(
            "procedure.list",
            PM + "ListProceduresParams",
            PM + "ListProceduresResult",
            PROCEDURES + "procedures:list_procedures",
        ),
        Method(
            "procedure.search",
            PM + "SearchProceduresParams",
            PM + "SearchProceduresResult",
            PROCEDURES + "search:search",
        ),
        Method(
            "procedure.evolve",
            PM + "EvolveProcedureParams",
            PM + "EvolveProcedureResult",
            PROCEDURES + "procedures:evolve",
            writes=True,
        ),
        Method(
            "episode.record",
            PM + "RecordEpisodeParams",
            PM + "RecordEpisodeResult",
            PROCEDURES + "procedures:record_episode",
            writes=True,
        ),
        Method(
            "procedure.review.list",
            PM + "ReviewListParams",
            PM + "ReviewListResult",
            PROCEDURES + "review:review_list",
        ),
        Method(
            "procedure.review.decide",
            PM + "ReviewDecideParams",
            PM + "ReviewDecideResult",
            PROCEDURES + "review:review_decide",
            writes=True,
        ),
        Method(
            "procedure.audit",
            PM + "AuditParams",
            PM + "AuditResult",
            PROCEDURES + "review:audit",
        ),
        Method(
            "entity.alias",
            PM + "EntityAliasParams",
            PM + "EntityAliasResult",
            PROCEDURES + "entities:alias",
            writes=True,
        ),
    ),
)

METHOD_TABLE: dict[str, Method] = {method.name: method for method in METHODS}


@cache
def method_catalog() -> list[MethodInfo]:
    """Every method with the JSON Schema of its params, as `server.info` reports them."""
    import msgspec

    from memproc.wire.messages import MethodInfo

    return [
        MethodInfo(name=method.name, params_schema=msgspec.json.schema(method.params))
        for method in METHODS
    ]
