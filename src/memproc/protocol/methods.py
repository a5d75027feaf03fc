"""The one explicit method table: wire name -> params type, result type, handler.

A test holds this table, the request union's tags and the files in `schemas/` to each other.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import msgspec

from memproc.ops import (
    checkpoint,
    entities,
    evidence,
    lifecycle,
    memory,
    procedure_review,
    procedure_search,
    procedures,
    project_context,
    revisions,
    search,
    system,
)
from memproc.ops.context import OpContext
from memproc.protocol import checkpoint_messages as cm
from memproc.protocol import context_messages as xm
from memproc.protocol import evidence_messages as em
from memproc.protocol import messages as m
from memproc.protocol import procedure_messages as pm


@dataclass(frozen=True)
class Method:
    name: str
    params: type[m.Params]
    result: type[m.Result]
    handler: Callable[[OpContext, Any], m.Result]
    # Inline methods run on the reader thread, ahead of any queue: they must be instant and
    # touch no storage, so that ping answers at once however busy the workers are.
    inline: bool = False
    # Whether the method changes stored state: within a scope a write waits for every request
    # sent before it, a read only for the writes before it (memproc.ordering).
    writes: bool = False


METHODS: tuple[Method, ...] = (
    Method("initialize", m.InitializeParams, m.InitializeResult, system.initialize, inline=True),
    Method("ping", m.PingParams, m.PingResult, system.ping, inline=True),
    Method("server.info", m.ServerInfoParams, m.ServerInfoResult, system.server_info, inline=True),
    Method("$/cancelRequest", m.CancelParams, m.CancelResult, system.cancel_request, inline=True),
    Method(
        "notifications/cancelled",
        m.CancelledNotificationParams,
        m.CancelResult,
        system.cancelled_notification,
        inline=True,
    ),
    Method("memory.remember", m.RememberParams, m.RememberResult, memory.remember, writes=True),
    Method(
        "memory.remember_batch",
        m.RememberBatchParams,
        m.RememberBatchResult,
        memory.remember_batch,
        writes=True,
    ),
    Method("memory.get", m.GetParams, m.GetResult, memory.get),
    Method("memory.list", m.ListParams, m.ListResult, memory.list_memories),
    Method("memory.forget", m.ForgetParams, m.ForgetResult, memory.forget, writes=True),
    Method("memory.search", m.SearchParams, m.SearchResult, search.search),
    Method("memory.feedback", m.FeedbackParams, m.FeedbackResult, memory.feedback, writes=True),
    Method("memory.edit", m.EditParams, m.EditResult, revisions.edit, writes=True),
    Method("memory.history", m.HistoryParams, m.HistoryResult, revisions.history),
    Method(
        "memory.challenge", m.ChallengeParams, m.TransitionResult, lifecycle.challenge, writes=True
    ),
    Method("memory.resolve", m.ResolveParams, m.TransitionResult, lifecycle.resolve, writes=True),
    Method(
        "memory.supersede", m.SupersedeParams, m.TransitionResult, lifecycle.supersede, writes=True
    ),
    Method(
        "memory.invalidate",
        m.InvalidateParams,
        m.TransitionResult,
        lifecycle.invalidate,
        writes=True,
    ),
    Method("memory.purge", m.PurgeParams, m.PurgeResult, lifecycle.purge, writes=True),
    Method("evidence.put", em.EvidencePutParams, em.EvidencePutResult, evidence.put, writes=True),
    Method("evidence.get", em.EvidenceGetParams, em.EvidenceGetResult, evidence.get),
    Method("evidence.list", em.EvidenceListParams, em.EvidenceListResult, evidence.list_evidence),
    Method(
        "checkpoint.save",
        cm.CheckpointSaveParams,
        cm.CheckpointSaveResult,
        checkpoint.save,
        writes=True,
    ),
    Method("checkpoint.get", cm.CheckpointGetParams, cm.CheckpointGetResult, checkpoint.get),
    Method(
        "checkpoint.list",
        cm.CheckpointListParams,
        cm.CheckpointListResult,
        checkpoint.list_checkpoints,
    ),
    Method(
        "checkpoint.clear",
        cm.CheckpointClearParams,
        cm.CheckpointClearResult,
        checkpoint.clear,
        writes=True,
    ),
    Method("context.get", xm.ContextGetParams, xm.ContextGetResult, project_context.get),
    *(
        Method(
            "procedure.create",
            pm.CreateProcedureParams,
            pm.CreateProcedureResult,
            procedures.create,
            writes=True,
        ),
        Method("procedure.get", pm.GetProcedureParams, pm.GetProcedureResult, procedures.get),
        Method(
            "procedure.list",
            pm.ListProceduresParams,
            pm.ListProceduresResult,
            procedures.list_procedures,
        ),
        Method(
            "procedure.search",
            pm.SearchProceduresParams,
            pm.SearchProceduresResult,
            procedure_search.search,
        ),
        Method(
            "procedure.evolve",
            pm.EvolveProcedureParams,
            pm.EvolveProcedureResult,
            procedures.evolve,
            writes=True,
        ),
        Method(
            "episode.record",
            pm.RecordEpisodeParams,
            pm.RecordEpisodeResult,
            procedures.record_episode,
            writes=True,
        ),
        Method(
            "procedure.review.list",
            pm.ReviewListParams,
            pm.ReviewListResult,
            procedure_review.review_list,
        ),
        Method(
            "procedure.review.decide",
            pm.ReviewDecideParams,
            pm.ReviewDecideResult,
            procedure_review.review_decide,
            writes=True,
        ),
        Method("procedure.audit", pm.AuditParams, pm.AuditResult, procedure_review.audit),
        Method(
            "entity.alias",
            pm.EntityAliasParams,
            pm.EntityAliasResult,
            entities.alias,
            writes=True,
        ),
    ),
)

METHOD_TABLE: dict[str, Method] = {method.name: method for method in METHODS}


@cache
def method_catalog() -> list[m.MethodInfo]:
    """Every method with the JSON Schema of its params, as `server.info` reports them."""
    return [
        m.MethodInfo(name=method.name, params_schema=params_schema(method.params))
        for method in METHODS
    ]


def params_schema(params_type: type[m.Params]) -> dict[str, Any]:
    return msgspec.json.schema(params_type)
