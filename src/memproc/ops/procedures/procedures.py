"""`procedure.create/get/list/evolve` and `episode.record`.

An evolve builds the new version, runs the gate against the procedures that may depend on it,
and promotes or quarantines it, all in one write transaction: readers see the old current
version or the new one, never none. Slow work (embedding) happens before the write begins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

import apsw
import msgspec

from memproc import gate
from memproc.errors import Conflict, InvalidParams, NotFound
from memproc.ids import uuid7
from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.ops.memories import citing
from memproc.ops.procedures import gating as pg
from memproc.ops.procedures import judging
from memproc.ops.procedures.views import finding_views, version_view
from memproc.store import procedure_log as log_sql
from memproc.store import procedures as procedure_sql
from memproc.wire.procedure_messages import (
    CreateProcedureParams,
    CreateProcedureResult,
    EvolveProcedureParams,
    EvolveProcedureResult,
    GetProcedureParams,
    GetProcedureResult,
    ListProceduresParams,
    ListProceduresResult,
    RecordEpisodeParams,
    RecordEpisodeResult,
)

# Body fields an evolve may change; the others carry over from the current version.
BODY_FIELDS = (
    "steps",
    "preconditions",
    "outputs",
    "entity_names",
    "aliases",
    "trigger",
    "references",
    "refs",
    "produces",
    "consumes",
)


def body_of(fields: dict[str, Any]) -> dict[str, Any]:
    """Protocol values -> the stored JSON body (steps numbered by their order)."""
    body = {k: msgspec.to_builtins(v) for k, v in fields.items() if v is not None}
    if "steps" in body:
        body["steps"] = [
            {"step": i, "action": s["action"], "detail": s.get("detail", "")}
            for i, s in enumerate(body["steps"], start=1)
        ]
    return body


def search_text(name: str, body: dict[str, Any]) -> str:
    """What procedure.search matches: name, steps, preconditions, outputs, entities, trigger."""
    gp = pg.gate_procedure("", name, body)
    parts = [name, *(f"{s.action} {s.detail}" for s in gp.steps), *gp.preconditions]
    parts += [f"{k} {v}" for k, v in gp.conditions] + list(gp.outputs)
    parts += [*gp.entity_names, *gp.aliases, gp.trigger]
    return "\n".join(p for p in parts if p)


class SearchVector(NamedTuple):
    """A version's vector for procedure.search, and the text it was embedded from."""

    text: str
    fingerprint: str
    vector: bytes


def search_vector(ctx: OpContext, text: str) -> SearchVector | None:
    """The vector of `text` when an embedder is ready, else None (procedure.search embeds
    what has none when it needs it)."""
    index = ctx.runtime.vectors.vector_index(0.0, required=False)
    if index is None:
        return None
    vector = index.embedder.embed_documents([text])[0]
    return SearchVector(text, index.fingerprint, vector.tobytes())


def create(ctx: OpContext, params: CreateProcedureParams) -> CreateProcedureResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    fields = {f: getattr(params, f) for f in BODY_FIELDS}
    body = body_of(fields)
    text = search_text(params.name, body)
    vector = search_vector(ctx, text)
    ctx.token.check()
    with ctx.runtime.store().writing(ctx.token) as conn:
        if procedure_sql.find_id_by_name(conn, scope, params.name) is not None:
            raise Conflict("a procedure with this name exists in the scope", field="name")
        _check_references(conn, scope, body, "$.params")
        procedure_id = procedure_sql.insert_procedure(conn, scope, params.name)
        new = procedure_sql.NewVersion(procedure_id, scope, "quarantined", body, text)
        version = procedure_sql.insert_version(conn, new)
        procedure_sql.promote(conn, scope, version)
        pg.index(conn, scope, pg.gate_procedure(procedure_id, params.name, body), params.refs)
        _store_vector(conn, version.seq, text, vector)
        log_sql.append(conn, scope, procedure_id, version.id, "created")
    return CreateProcedureResult(id=procedure_id, version_id=version.id)


def _check_references(conn: apsw.Connection, scope: str, fields: dict[str, Any], path: str) -> None:
    """`references` name procedures of the scope; `refs` name visible memories of the scope
    (so a citation never crosses scopes)."""
    for i, procedure_id in enumerate(fields.get("references", [])):
        if not procedure_sql.exists(conn, scope, procedure_id):
            raise NotFound("referenced procedure not found", path=f"{path}.references[{i}]")
    citing.check_refs(conn, scope, fields.get("refs", []), f"{path}.refs")


def _store_vector(conn: apsw.Connection, seq: int, text: str, vector: SearchVector | None) -> None:
    """Store the vector if it was embedded from the version's own text: the text is read
    before the write, and should the current version have changed in between, a vector of
    other text would rank the version by what it does not say."""
    if vector is not None and vector.text == text:
        procedure_sql.put_vector(conn, seq, vector.fingerprint, vector.vector)


def get(ctx: OpContext, params: GetProcedureParams) -> GetProcedureResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        if params.version_id is None:
            record = procedure_sql.current_version(conn, scope, params.id)
        else:
            record = procedure_sql.get_version(conn, scope, params.version_id)
    if record is None or record.procedure_id != params.id:
        raise NotFound("procedure or version not found", id=params.id)
    return GetProcedureResult(procedure=version_view(record))


def list_procedures(ctx: OpContext, params: ListProceduresParams) -> ListProceduresResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    before = cursors.decode("p1", params.cursor)
    with ctx.runtime.store().reading(ctx.token) as conn:
        records = procedure_sql.list_current_page(conn, scope, before, params.limit + 1)
        page, more = records[: params.limit], len(records) > params.limit
        last = procedure_sql.procedure_seq(conn, page[-1].procedure_id) if more else None
    next_cursor = None if last is None else cursors.encode("p1", last)
    return ListProceduresResult(items=[version_view(r) for r in page], next_cursor=next_cursor)


# -- evolve -------------------------------------------------------------------------------------


def evolve(ctx: OpContext, params: EvolveProcedureParams) -> EvolveProcedureResult:
    return evolve_with(ctx, params, pg.GATES[ctx.runtime.config.procedure_gate])


def evolve_with(
    ctx: OpContext, params: EvolveProcedureParams, gate_fn: pg.GateFunction
) -> EvolveProcedureResult:
    """`evolve` with the gate given: tests pass a failing one to see the gate fail closed."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    changes = body_of({f: getattr(params, f) for f in BODY_FIELDS})
    if not changes:
        raise InvalidParams("an evolve must change at least one of " + ", ".join(BODY_FIELDS))
    store = ctx.runtime.store()
    with store.reading(ctx.token) as conn:
        current = _current(conn, scope, params.id)
        old, new = pg.of_record(current), _revised(current, changes)
        aliases = pg.scope_aliases(conn, scope)
        found = pg.candidates(conn, scope, old, new, ctx.runtime.config.procedure_gate, aliases)
    prepared = prepare(ctx, current.name, (old, new, found), {**current.body, **changes})
    ctx.token.check()
    with store.writing(ctx.token) as conn:
        if params.episode_id and not log_sql.episode_exists(conn, scope, params.episode_id):
            raise NotFound("episode not found", path="$.params.episode_id")
        _check_references(conn, scope, changes, "$.params")
        step = Revision(scope, params.id, changes, params.reason, params.episode_id)
        applied = apply_revision(ctx, conn, step, gate_fn, prepared, ask_judge=True)
    if applied.judgement is not None:
        judging.send(ctx, applied.judgement)  # after the commit: an answer finds the revision
    return applied.result


@dataclass(frozen=True)
class Prepared:
    """What a revision needs that is slow to compute (embedding), computed before the write
    that applies it so that the write lock is never held for it."""

    similar: dict[tuple[str, str], float] = field(default_factory=dict)
    semantic: pg.SemanticState = "not_needed"
    vector: SearchVector | None = None


# What a gate compares: the current version, the revision, and the candidates found for them.
Compared = tuple[gate.Procedure, gate.Procedure, list[gate.Procedure]]


def prepare(ctx: OpContext, name: str, compared: Compared, body: dict[str, Any]) -> Prepared:
    """The semantic signal for the pairs the gate will ask about when it compares the
    revision (old, new) with the candidates found, and the revised `body`'s search vector."""
    similar, semantic = pg.similarity(ctx, *compared)
    return Prepared(similar, semantic, search_vector(ctx, search_text(name, body)))


class Revision(msgspec.Struct, frozen=True):
    scope: str
    procedure_id: str
    changes: dict[str, Any]
    reason: str
    episode_id: str | None = None
    actor: str | None = None


def _current(conn: apsw.Connection, scope: str, procedure_id: str) -> procedure_sql.VersionRecord:
    current = procedure_sql.current_version(conn, scope, procedure_id)
    if current is None:
        raise NotFound("procedure not found", id=procedure_id)
    return current


def _revised(current: procedure_sql.VersionRecord, changes: dict[str, Any]) -> Any:
    return pg.gate_procedure(current.procedure_id, current.name, {**current.body, **changes})


@dataclass(frozen=True)
class Applied:
    result: EvolveProcedureResult
    judgement: judging.Judgement | None = None  # questions to send once the write commits


def apply_revision(
    ctx: OpContext,
    conn: apsw.Connection,
    step: Revision,
    gate_fn: pg.GateFunction,
    prepared: Prepared,
    ask_judge: bool = False,
) -> Applied:
    """Inside the caller's write: store the revision, gate it, and promote or quarantine it.
    Pairs the gate leaves undecided become questions for the client's judge (`ask_judge`,
    when the client declared one; the revision waits quarantined), else the policy's."""
    current = _current(conn, step.scope, step.procedure_id)
    body = {**current.body, **step.changes}
    old, new = pg.of_record(current), _revised(current, step.changes)
    aliases = pg.scope_aliases(conn, step.scope)
    kind = ctx.runtime.config.procedure_gate
    found = pg.candidates(conn, step.scope, old, new, kind, aliases)
    similar = prepared.similar
    signals = gate.Signals(similar, aliases, ctx.runtime.config.gate_ask_share)
    assessment, failed = pg.run(gate_fn, old, new, found, signals)
    version_id = uuid7()  # the judge's questions name the revision before it is stored
    asking: dict[judging.Key, Any] = {}
    if ask_judge and not failed:
        revision = (step.scope, step.reason, version_id)
        asking = judging.questions(ctx, revision, (old, new, found), assessment)
    settled = judging.Settled() if failed else judging.settle(ctx, assessment, {}, asking)
    findings = assessment.findings + settled.findings
    views = [msgspec.to_builtins(v) for v in finding_views(findings)]
    stored = _new_version(step, current, body, views, version_id)
    version = procedure_sql.insert_version(conn, stored)
    _store_vector(conn, version.seq, stored.search_text, prepared.vector)
    status: Literal["promoted", "quarantined"] = "quarantined" if findings else "promoted"
    if status == "promoted":
        procedure_sql.promote(conn, step.scope, version)
        pg.index(conn, step.scope, new, body.get("refs", []))
    detail: dict[str, Any] = {"status": status, "findings": views, "gate": kind}
    detail["semantic"] = prepared.semantic
    if settled.audit:
        detail["undecided"] = settled.audit
    if failed:
        detail["gate_error"] = True
    log_sql.append(
        conn,
        step.scope,
        step.procedure_id,
        version.id,
        "evolved",
        actor=step.actor,
        reason=step.reason,
        detail=detail,
    )
    result = EvolveProcedureResult(
        id=step.procedure_id,
        status=status,
        version_id=version.id,
        findings=finding_views(findings),
        reason="gate_error" if failed else None,
        undecided=settled.pairs,
    )
    if not asking:
        return Applied(result)
    judgement = judging.Judgement(
        step.scope, step.procedure_id, version.id, current.id, gate_fn, similar, asking
    )
    return Applied(result, judgement)


def _new_version(
    step: Revision,
    current: procedure_sql.VersionRecord,
    body: dict[str, Any],
    findings: list[dict[str, Any]],
    version_id: str,
) -> procedure_sql.NewVersion:
    """The revision as stored: quarantined (promotion, if any, follows in the same write)."""
    return procedure_sql.NewVersion(
        step.procedure_id,
        step.scope,
        "quarantined",
        body,
        search_text(current.name, body),
        parent_id=current.id,
        reason=step.reason,
        findings=findings,
        episode_id=step.episode_id,
        id=version_id,
    )


# -- episodes -----------------------------------------------------------------------------------


def record_episode(ctx: OpContext, params: RecordEpisodeParams) -> RecordEpisodeResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        version_id = None
        if params.procedure_id is not None:
            version_id = _current(conn, scope, params.procedure_id).id
        new = log_sql.NewEpisode(
            scope,
            params.procedure_id,
            version_id,
            params.outcome,
            params.failed_at_step,
            params.notes,
        )
        episode_id = log_sql.insert_episode(conn, new)
    return RecordEpisodeResult(id=episode_id)
