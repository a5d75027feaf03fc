"""Params and results of `procedure.*` and `episode.*`: procedural memory with a regression gate.

Kept apart from `messages.py` so the memory contract and the procedure contract grow
independently; the same bases (`Params` forbids unknown fields, `Result` fields added later
get defaults) and shared aliases apply.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from memproc.protocol.messages import (
    Cursor,
    MemoryId,
    Params,
    Reason,
    Refs,
    Result,
    Scope,
    ShortText,
)

ProcedureId = MemoryId
Name = Annotated[str, Meta(min_length=1, max_length=256)]
StepText = Annotated[str, Meta(max_length=4000)]
VersionStatus = Literal["current", "quarantined", "retired", "rejected"]
PageLimit = Annotated[int, Meta(ge=1, le=200)]


class ProcedureStep(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One step; `step` is its 1-based number (the list order wins if they disagree)."""

    action: Annotated[str, Meta(min_length=1, max_length=4000)]
    detail: StepText = ""
    step: Annotated[int, Meta(ge=1, le=10_000)] | None = None


class Condition(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A structured precondition: `{key: "node", value: ">= 20"}`."""

    key: Annotated[str, Meta(min_length=1, max_length=256)]
    value: StepText


class Output(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A structured output: what it is, and where, in which format and version."""

    name: Annotated[str, Meta(min_length=1, max_length=512)]
    path: ShortText | None = None
    format: ShortText | None = None
    version: ShortText | None = None


Precondition = Annotated[str, Meta(min_length=1, max_length=4000)] | Condition
OutputItem = Annotated[str, Meta(min_length=1, max_length=4000)] | Output
Steps = Annotated[list[ProcedureStep], Meta(min_length=1, max_length=200)]
Preconditions = Annotated[list[Precondition], Meta(max_length=100)]
Outputs = Annotated[list[OutputItem], Meta(max_length=100)]
EntityNames = Annotated[list[Name], Meta(max_length=64)]
References = Annotated[list[ProcedureId], Meta(max_length=64)]


class Finding(msgspec.Struct, kw_only=True):
    """Why a revision may break a dependent procedure, in words a reviewer can check."""

    dependent_id: str
    pattern: str
    detail: str
    evidence: dict[str, str] = {}


class ProcedureView(msgspec.Struct, kw_only=True):
    id: str
    scope: str
    name: str
    version: int
    version_id: str
    status: VersionStatus
    steps: list[ProcedureStep]
    preconditions: list[Precondition]
    outputs: list[OutputItem]
    entity_names: list[str]
    aliases: list[str]
    trigger: str | None
    references: list[str]
    success_count: int
    failure_count: int
    parent_version_id: str | None
    created_at: str
    reason: str | None = None
    findings: list[Finding] = []
    refs: list[str] = []


class CreateProcedureParams(Params, kw_only=True):
    scope: Scope | None = None
    name: Name
    steps: Steps
    preconditions: Preconditions = msgspec.field(default_factory=list)
    outputs: Outputs = msgspec.field(default_factory=list)
    entity_names: EntityNames = msgspec.field(default_factory=list)
    aliases: EntityNames = msgspec.field(default_factory=list)
    trigger: StepText | None = None
    references: References = msgspec.field(default_factory=list)
    refs: Refs = msgspec.field(default_factory=list)


class CreateProcedureResult(Result, kw_only=True):
    id: str
    version_id: str


class GetProcedureParams(Params, kw_only=True):
    scope: Scope | None = None
    id: ProcedureId
    version_id: ProcedureId | None = None


class GetProcedureResult(Result, kw_only=True):
    procedure: ProcedureView


class ListProceduresParams(Params, kw_only=True):
    scope: Scope | None = None
    limit: PageLimit = 50
    cursor: Cursor | None = None


class ListProceduresResult(Result, kw_only=True):
    items: list[ProcedureView]
    next_cursor: str | None = None


class SearchProceduresParams(Params, kw_only=True):
    scope: Scope | None = None
    query: Annotated[str, Meta(min_length=1, max_length=8192)]
    limit: Annotated[int, Meta(ge=1, le=100)] = 10


class ProcedureHit(msgspec.Struct, kw_only=True):
    procedure: ProcedureView
    score: float
    lexical_rank: int | None = None
    dense_rank: int | None = None


class SearchProceduresResult(Result, kw_only=True):
    results: list[ProcedureHit]
    mode: Literal["lexical", "hybrid"]
    degraded: str | None = None


class EvolveProcedureParams(Params, kw_only=True):
    """Fields left out keep the current version's value."""

    scope: Scope | None = None
    id: ProcedureId
    reason: Reason
    steps: Steps | None = None
    preconditions: Preconditions | None = None
    outputs: Outputs | None = None
    entity_names: EntityNames | None = None
    aliases: EntityNames | None = None
    trigger: StepText | None = None
    references: References | None = None
    refs: Refs | None = None  # None keeps the current refs; a list replaces them
    episode_id: ProcedureId | None = None


class EvolveProcedureResult(Result, kw_only=True):
    id: str
    status: Literal["promoted", "quarantined"]
    version_id: str
    findings: list[Finding]
    reason: str | None = None  # "gate_error" when the gate failed (fail closed)


class RecordEpisodeParams(Params, kw_only=True):
    scope: Scope | None = None
    procedure_id: ProcedureId | None = None
    outcome: Literal["success", "failure"]
    failed_at_step: Annotated[int, Meta(ge=1, le=10_000)] | None = None
    notes: Annotated[str, Meta(max_length=16_000)] = ""


class RecordEpisodeResult(Result, kw_only=True):
    id: str


class ReviewListParams(Params, kw_only=True):
    scope: Scope | None = None
    limit: PageLimit = 50


class ReviewItem(msgspec.Struct, kw_only=True):
    revision_id: str
    procedure_id: str
    name: str
    version: int
    reason: str | None
    findings: list[Finding]
    created_at: str
    current_version_id: str | None = None


class ReviewListResult(Result, kw_only=True):
    items: list[ReviewItem]


class DependentRevision(Params, kw_only=True):
    """A revision of an affected dependent, approved together with the reviewed one."""

    id: ProcedureId
    reason: Reason
    steps: Steps | None = None
    preconditions: Preconditions | None = None
    outputs: Outputs | None = None


class ReviewDecideParams(Params, kw_only=True):
    scope: Scope | None = None
    revision_id: ProcedureId
    decision: Literal["approve", "reject"]
    reason: Reason
    actor: Annotated[str, Meta(min_length=1, max_length=256)]
    revisions: Annotated[list[DependentRevision], Meta(max_length=32)] = msgspec.field(
        default_factory=list
    )


class ReviewDecideResult(Result, kw_only=True):
    revision_id: str
    status: Literal["current", "rejected"]
    revisions: list[EvolveProcedureResult] = msgspec.field(default_factory=list)


class AuditParams(Params, kw_only=True):
    scope: Scope | None = None
    procedure_id: ProcedureId | None = None
    limit: PageLimit = 100
    cursor: Cursor | None = None


class AuditEntry(msgspec.Struct, kw_only=True):
    seq: int
    at: str
    event: str
    procedure_id: str
    version_id: str | None = None
    actor: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = {}


class AuditResult(Result, kw_only=True):
    items: list[AuditEntry]
    next_cursor: str | None = None
