"""Every method of the server's table, typed by its params and result.

Generated from `memproc.server.methods.METHODS` by `memproc schema` (`make schemas`): do not
edit. `memproc schema --check` and tests/test_client_methods.py fail when it drifts.
Use: `client.call(MEMORY_REMEMBER, RememberParams(...))` returns a `RememberResult`.
"""

from __future__ import annotations

from typing import Any

from memproc.client.method import Method
from memproc.wire import (
    checkpoint_messages,
    context_messages,
    evidence_messages,
    messages,
    procedure_messages,
)

INITIALIZE = Method(
    "initialize",
    messages.InitializeParams,
    messages.InitializeResult,
)

PING = Method(
    "ping",
    messages.PingParams,
    messages.PingResult,
)

SERVER_INFO = Method(
    "server.info",
    messages.ServerInfoParams,
    messages.ServerInfoResult,
)

CANCEL_REQUEST = Method(
    "$/cancelRequest",
    messages.CancelParams,
    messages.CancelResult,
)

NOTIFICATIONS_CANCELLED = Method(
    "notifications/cancelled",
    messages.CancelledNotificationParams,
    messages.CancelResult,
)

MEMORY_REMEMBER = Method(
    "memory.remember",
    messages.RememberParams,
    messages.RememberResult,
    writes=True,
)

MEMORY_REMEMBER_BATCH = Method(
    "memory.remember_batch",
    messages.RememberBatchParams,
    messages.RememberBatchResult,
    writes=True,
)

MEMORY_GET = Method(
    "memory.get",
    messages.GetParams,
    messages.GetResult,
)

MEMORY_LIST = Method(
    "memory.list",
    messages.ListParams,
    messages.ListResult,
)

MEMORY_FORGET = Method(
    "memory.forget",
    messages.ForgetParams,
    messages.ForgetResult,
    writes=True,
)

MEMORY_SEARCH = Method(
    "memory.search",
    messages.SearchParams,
    messages.SearchResult,
)

MEMORY_FEEDBACK = Method(
    "memory.feedback",
    messages.FeedbackParams,
    messages.FeedbackResult,
    writes=True,
)

MEMORY_EDIT = Method(
    "memory.edit",
    messages.EditParams,
    messages.EditResult,
    writes=True,
)

MEMORY_HISTORY = Method(
    "memory.history",
    messages.HistoryParams,
    messages.HistoryResult,
)

MEMORY_CHALLENGE = Method(
    "memory.challenge",
    messages.ChallengeParams,
    messages.TransitionResult,
    writes=True,
)

MEMORY_RESOLVE = Method(
    "memory.resolve",
    messages.ResolveParams,
    messages.TransitionResult,
    writes=True,
)

MEMORY_SUPERSEDE = Method(
    "memory.supersede",
    messages.SupersedeParams,
    messages.TransitionResult,
    writes=True,
)

MEMORY_INVALIDATE = Method(
    "memory.invalidate",
    messages.InvalidateParams,
    messages.TransitionResult,
    writes=True,
)

MEMORY_PURGE = Method(
    "memory.purge",
    messages.PurgeParams,
    messages.PurgeResult,
    writes=True,
)

EVIDENCE_PUT = Method(
    "evidence.put",
    evidence_messages.EvidencePutParams,
    evidence_messages.EvidencePutResult,
    writes=True,
)

EVIDENCE_GET = Method(
    "evidence.get",
    evidence_messages.EvidenceGetParams,
    evidence_messages.EvidenceGetResult,
)

EVIDENCE_LIST = Method(
    "evidence.list",
    evidence_messages.EvidenceListParams,
    evidence_messages.EvidenceListResult,
)

CHECKPOINT_SAVE = Method(
    "checkpoint.save",
    checkpoint_messages.CheckpointSaveParams,
    checkpoint_messages.CheckpointSaveResult,
    writes=True,
)

CHECKPOINT_GET = Method(
    "checkpoint.get",
    checkpoint_messages.CheckpointGetParams,
    checkpoint_messages.CheckpointGetResult,
)

CHECKPOINT_LIST = Method(
    "checkpoint.list",
    checkpoint_messages.CheckpointListParams,
    checkpoint_messages.CheckpointListResult,
)

CHECKPOINT_CLEAR = Method(
    "checkpoint.clear",
    checkpoint_messages.CheckpointClearParams,
    checkpoint_messages.CheckpointClearResult,
    writes=True,
)

CONTEXT_GET = Method(
    "context.get",
    context_messages.ContextGetParams,
    context_messages.ContextGetResult,
)

PROCEDURE_CREATE = Method(
    "procedure.create",
    procedure_messages.CreateProcedureParams,
    procedure_messages.CreateProcedureResult,
    writes=True,
)

PROCEDURE_GET = Method(
    "procedure.get",
    procedure_messages.GetProcedureParams,
    procedure_messages.GetProcedureResult,
)

PROCEDURE_LIST = Method(
    "procedure.list",
    procedure_messages.ListProceduresParams,
    procedure_messages.ListProceduresResult,
)

PROCEDURE_SEARCH = Method(
    "procedure.search",
    procedure_messages.SearchProceduresParams,
    procedure_messages.SearchProceduresResult,
)

PROCEDURE_EVOLVE = Method(
    "procedure.evolve",
    procedure_messages.EvolveProcedureParams,
    procedure_messages.EvolveProcedureResult,
    writes=True,
)

EPISODE_RECORD = Method(
    "episode.record",
    procedure_messages.RecordEpisodeParams,
    procedure_messages.RecordEpisodeResult,
    writes=True,
)

PROCEDURE_REVIEW_LIST = Method(
    "procedure.review.list",
    procedure_messages.ReviewListParams,
    procedure_messages.ReviewListResult,
)

PROCEDURE_REVIEW_DECIDE = Method(
    "procedure.review.decide",
    procedure_messages.ReviewDecideParams,
    procedure_messages.ReviewDecideResult,
    writes=True,
)

PROCEDURE_AUDIT = Method(
    "procedure.audit",
    procedure_messages.AuditParams,
    procedure_messages.AuditResult,
)

ENTITY_ALIAS = Method(
    "entity.alias",
    procedure_messages.EntityAliasParams,
    procedure_messages.EntityAliasResult,
    writes=True,
)

ALL: tuple[Method[..., Any, Any], ...] = (
    INITIALIZE,
    PING,
    SERVER_INFO,
    CANCEL_REQUEST,
    NOTIFICATIONS_CANCELLED,
    MEMORY_REMEMBER,
    MEMORY_REMEMBER_BATCH,
    MEMORY_GET,
    MEMORY_LIST,
    MEMORY_FORGET,
    MEMORY_SEARCH,
    MEMORY_FEEDBACK,
    MEMORY_EDIT,
    MEMORY_HISTORY,
    MEMORY_CHALLENGE,
    MEMORY_RESOLVE,
    MEMORY_SUPERSEDE,
    MEMORY_INVALIDATE,
    MEMORY_PURGE,
    EVIDENCE_PUT,
    EVIDENCE_GET,
    EVIDENCE_LIST,
    CHECKPOINT_SAVE,
    CHECKPOINT_GET,
    CHECKPOINT_LIST,
    CHECKPOINT_CLEAR,
    CONTEXT_GET,
    PROCEDURE_CREATE,
    PROCEDURE_GET,
    PROCEDURE_LIST,
    PROCEDURE_SEARCH,
    PROCEDURE_EVOLVE,
    EPISODE_RECORD,
    PROCEDURE_REVIEW_LIST,
    PROCEDURE_REVIEW_DECIDE,
    PROCEDURE_AUDIT,
    ENTITY_ALIAS,
)
