"""Params and results of `procedure.*` and `episode.*`: procedural memory with a regression gate.

Kept apart from `messages.py` so the memory contract and the procedure contract grow
independently; the same bases (`Params` forbids unknown fields, `Result` fields added later
get defaults) and shared aliases apply.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from memproc.wire.messages import (
    ChannelQueries,
    Cursor,
    MemoryId,
    Params,
    Reason,
    Refs,
    Result,
    Scope,
    ShortText,
)
from memproc.wire.vocabulary import EpisodeOutcome, ReplyOutcome, VersionStatus

ProcedureId = MemoryId
Name = Annotated[str, Meta(min_length=1, max_length=256)]
StepText = Annotated[str, Meta(max_length=4000)]
PageLimit = Annotated[int, Meta(ge=1, le=200)]


class ProcedureStep(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """One step; `step` is its 1-based number (the list order wins if they disagree)."""

    action: Annotated[str, Meta(min_length=1, max_length=4000)]
    detail: StepText = ""
    step: Annotated[int, Meta(ge=1, le=10_000)] | None = None


Binds = Literal["self", "consumers", "scope"]
# A version constraint: comma-separated clauses such as ">=2,<3", ">=1.4", "~=1.2" or "5".
_CLAUSE = r"(?:[<>]=?|==?|!=|~=|\^|~)?\s*[0-9A-Za-z.*+-]+"
VersionConstraint = Annotated[
    str, Meta(max_length=256, pattern=rf"^\s*{_CLAUSE}(?:\s*,\s*{_CLAUSE})*\s*$")
]
# When an output is ready: a time of day ("02:30") or a duration after the start ("45m", "2h").
AvailableAfter = Annotated[str, Meta(pattern=r"^(?:[01]\d|2[0-3]):[0-5]\d$|^\d+(?:m|h)$")]
ContractId = Annotated[str, Meta(min_length=1, max_length=512)]


class Condition(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """A structured precondition, in one of two forms.

    `{key, value}`: a requirement on a setting (`{key: "node", value: ">= 20"}`).
    `{text, binds}`: a sentence, with who it binds: `self` (only this procedure), `consumers`
    (procedures that consume its outputs) or `scope` (every procedure of the scope). Without
    `binds` the gate infers the reach, conservatively, and its findings say it was inferred.
    """

    key: Annotated[str, Meta(min_length=1, max_length=256)] | None = None
    value: StepText | None = None
    text: Annotated[str, Meta(min_length=1, max_length=4000)] | None = None
    binds: Binds | None = None

    def __post_init__(self) -> None:
        keyed = self.key is not None and self.value is not None
        if keyed == (self.text is not None) or (self.key is None) != (self.value is None):
            raise ValueError("a precondition object has either `text` or `key` and `value`")


class Produced(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """An output this procedure declares: what other procedures may consume by `id`."""

    id: ContractId
    format: ShortText | None = None
    version: ShortText | None = None
    location: Annotated[str, Meta(max_length=2048)] | None = None
    available_after: AvailableAfter | None = None


class Consumed(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, omit_defaults=True):
    """An input this procedure declares: an output `id`, of the procedure named `from` (or of
    any procedure of the scope producing that id), in a format and a version range."""

    id: ContractId
    from_: Name | None = msgspec.field(default=None, name="from")
    format: ShortText | None = None
    version: VersionConstraint | None = None


class Output(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A structured output: what it is, and where, in which format and version. The gate reads
    it as a declared output too (`name` as its id, `path` as its location)."""

    name: Annotated[str, Meta(min_length=1, max_length=512)]
    path: ShortText | None = None
    format: ShortText | None = None
    version: ShortText | None = None


Precondition = Annotated[str, Meta(min_length=1, max_length=4000)] | Condition
OutputItem = Annotated[str, Meta(min_length=1, max_length=4000)] | Output
Steps = Annotated[list[ProcedureStep], Meta(min_length=1, max_length=200)]
Preconditions = Annotated[list[Precondition], Meta(max_length=100)]
Outputs = Annotated[list[OutputItem], Meta(max_length=100)]
Produces = Annotated[list[Produced], Meta(max_length=100)]
Consumes = Annotated[list[Consumed], Meta(max_length=100)]
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
    produces: list[Produced] = []
    consumes: list[Consumed] = []


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
    produces: Produces = msgspec.field(default_factory=list)
    consumes: Consumes = msgspec.field(default_factory=list)


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
    explain: bool = False


class ProcedureHit(msgspec.Struct, kw_only=True):
    procedure: ProcedureView
    score: float
    lexical_rank: int | None = None
    dense_rank: int | None = None


class ProcedureCandidateExplanation(msgspec.Struct, kw_only=True):
    """One current procedure version a channel proposed, and what became of it."""

    id: str
    version_id: str
    outcome: Literal["returned", "outside_limit"]
    lexical_rank: int | None = None
    lexical_score: float | None = None  # bm25 negated: higher is better
    dense_rank: int | None = None
    dense_similarity: float | None = None
    fused_rank: int | None = None
    fused_score: float | None = None
    in_head: bool = False  # within a channel's top `candidate_pool`: fused with the head


class ProcedureExplanation(msgspec.Struct, kw_only=True):
    queries: ChannelQueries
    settings: dict[str, Any]
    counts: dict[str, int]
    candidates: list[ProcedureCandidateExplanation]


class SearchProceduresResult(Result, kw_only=True):
    results: list[ProcedureHit]
    mode: Literal["lexical", "hybrid"]
    degraded: str | None = None
    explanation: ProcedureExplanation | None = None


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
    produces: Produces | None = None
    consumes: Consumes | None = None
    episode_id: ProcedureId | None = None


# How a `gate/judge` call ended.
JudgeOutcome = ReplyOutcome


class UndecidedPair(msgspec.Struct, kw_only=True):
    """A dependent the rules could not decide on, and how it was settled.

    `why`: the rules disagree, their confidence is low, or the change is of a kind no rule can
    judge (world knowledge). `settled_by` is "judge" when the client's judge answered,
    "policy" (`gate_undecided`) when it did not, and "pending" while the question is out: the
    evolve answers at once with the revision quarantined, and a `gate/settled` notification
    follows when every question has ended. `outcome` says what happened when the judge was
    asked: "asked" while pending, "no_judge" when the client declared none, "not_asked" when
    a rule finding had already quarantined the revision (or one evolve had more questions
    than it may ask)."""

    dependent_id: str
    why: Literal["rules_disagree", "low_confidence", "world_knowledge"]
    detail: str
    settled_by: Literal["judge", "policy", "pending"]
    outcome: JudgeOutcome | Literal["asked", "no_judge", "not_asked"]
    verdict: Literal["breaks", "safe"] | None = None
    reason: str = ""


class EvolveProcedureResult(Result, kw_only=True):
    id: str
    status: Literal["promoted", "quarantined"]
    version_id: str
    findings: list[Finding]
    reason: str | None = None  # "gate_error" when the gate failed (fail closed)
    undecided: list[UndecidedPair] = msgspec.field(default_factory=list)


class EntityAliasParams(Params, kw_only=True):
    """Other names of an entity in a scope ("k8s" and "kube" for Kubernetes). The gate looks
    a revision's dependents up under them too, and counts them as the entity's own names."""

    scope: Scope | None = None
    name: Name
    aliases: Annotated[list[Name], Meta(min_length=1, max_length=64)]


class EntityAliasResult(Result, kw_only=True):
    name: str  # normalized: lowercase words
    aliases: list[str]  # every alias the entity has in the scope now, normalized


class RecordEpisodeParams(Params, kw_only=True):
    scope: Scope | None = None
    procedure_id: ProcedureId | None = None
    outcome: EpisodeOutcome
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
    produces: Produces | None = None
    consumes: Consumes | None = None


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


# -- gate/judge: a server-to-client request ------------------------------------------------------


class ValueChange(msgspec.Struct, kw_only=True, omit_defaults=True):
    """One setting, limit or contract field whose value the revision changed."""

    key: str
    old: str | None = None
    new: str | None = None
    where: str = ""  # "step 2", "produces[id=orders].format", ...


class ChangeSet(msgspec.Struct, kw_only=True):
    """What a revision changed, as the gate read it: steps by their sequence diff, values of
    the same key, preconditions, and the declared contract."""

    added_steps: list[str] = []
    removed_steps: list[str] = []
    moved_steps: list[str] = []
    changed_values: list[ValueChange] = []
    added_preconditions: list[str] = []
    removed_preconditions: list[str] = []
    contract: list[ValueChange] = []


class JudgedProcedure(msgspec.Struct, kw_only=True):
    """A procedure as the judge sees it: the fields a model needs to reason about it."""

    id: str
    name: str
    steps: list[ProcedureStep]
    preconditions: list[Precondition] = []
    entity_names: list[str] = []
    trigger: str | None = None
    produces: list[Produced] = []
    consumes: list[Consumed] = []


class JudgeParams(msgspec.Struct, kw_only=True):
    """Params of `gate/judge`, sent by the service to its client when the gate cannot decide
    whether a revision breaks one dependent. `prompt` is ready to hand to a model; the answer
    is a `JudgeVerdict`. One request per undecided dependent; `revision_id` is the quarantined
    revision the answer decides."""

    scope: str
    procedure_id: str
    revision_id: str
    reason: str  # the revision's reason, as its author gave it
    why: Literal["rules_disagree", "low_confidence", "world_knowledge"]
    detail: str
    changes: ChangeSet
    old: JudgedProcedure
    revision: JudgedProcedure
    dependent: JudgedProcedure
    findings: list[Finding] = []  # what the rules suspected, if anything
    prompt: str


class JudgeVerdict(msgspec.Struct, kw_only=True):
    """The client's answer to `gate/judge`."""

    verdict: Literal["breaks", "safe"]
    reason: Annotated[str, Meta(max_length=4000)] = ""


class GateSettledParams(msgspec.Struct, kw_only=True):
    """The `gate/settled` notification: every question an evolve sent to the judge has ended,
    and the revision is now `current` (promoted), still `quarantined` (a verdict of "breaks",
    the policy, or a procedure that changed meanwhile), or whatever a review made of it first.
    The same facts are in `procedure.audit` (event "judged" or "approved" by "judge")."""

    scope: str
    procedure_id: str
    revision_id: str
    status: VersionStatus
    findings: list[Finding] = []
    undecided: list[UndecidedPair] = []
