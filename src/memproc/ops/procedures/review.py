"""The way out of quarantine: `procedure.review.list`, `procedure.review.decide`, and
`procedure.audit`, the append-only record of every evolve and decision.

Approving promotes the quarantined revision and may carry revisions of the dependents it
affects, each gated in the same transaction: a reviewer fixes the dependents and lets the
revision through at once, or nothing changes. Each carried revision is gated and stored as an
evolve's is, with the semantic signal and its search vector computed before the write.
"""

from __future__ import annotations

from typing import Any, Literal

import apsw

from memproc.errors import Conflict, NotFound
from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.ops.procedures import gating as pg
from memproc.ops.procedures.procedures import (
    BODY_FIELDS,
    Compared,
    Prepared,
    Revision,
    apply_revision,
    body_of,
    prepare,
)
from memproc.ops.procedures.views import version_view
from memproc.store import procedure_log as log_sql
from memproc.store import procedures as procedure_sql
from memproc.wire.procedure_messages import (
    AuditEntry,
    AuditParams,
    AuditResult,
    DependentRevision,
    EvolveProcedureResult,
    ReviewDecideParams,
    ReviewDecideResult,
    ReviewItem,
    ReviewListParams,
    ReviewListResult,
)


def review_list(ctx: OpContext, params: ReviewListParams) -> ReviewListResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        records = procedure_sql.quarantined(conn, scope, params.limit)
        currents = {
            r.procedure_id: procedure_sql.current_version(conn, scope, r.procedure_id)
            for r in records
        }
    items = []
    for record in records:
        view = version_view(record)
        current = currents[record.procedure_id]
        items.append(
            ReviewItem(
                revision_id=record.id,
                procedure_id=record.procedure_id,
                name=record.name,
                version=record.version,
                reason=record.reason,
                findings=view.findings,
                created_at=record.created_at,
                current_version_id=None if current is None else current.id,
            )
        )
    return ReviewListResult(items=items)


def review_decide(ctx: OpContext, params: ReviewDecideParams) -> ReviewDecideResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    if params.decision == "reject" and params.revisions:
        raise Conflict("a rejection cannot carry dependent revisions", field="revisions")
    gate_fn = pg.GATES[ctx.runtime.config.procedure_gate]
    steps = [_carried(scope, revision, params.actor) for revision in params.revisions]
    prepared = _prepare_carried(ctx, scope, params.revision_id, steps)
    ctx.token.check()
    with ctx.runtime.store().writing(ctx.token) as conn:
        record = procedure_sql.get_version(conn, scope, params.revision_id)
        if record is None:
            raise NotFound("revision not found", id=params.revision_id)
        if record.status != "quarantined":
            raise Conflict("revision is not awaiting review", status=record.status)
        status: Literal["current", "rejected"] = (
            "current" if params.decision == "approve" else "rejected"
        )
        if status == "current":
            procedure_sql.promote(conn, scope, record)
            pg.index(conn, scope, pg.of_record(record), record.body.get("refs", []))
        else:
            procedure_sql.set_status(conn, record.id, "rejected")
        log_sql.append(
            conn,
            scope,
            record.procedure_id,
            record.id,
            "approved" if status == "current" else "rejected",
            actor=params.actor,
            reason=params.reason,
            detail={"dependent_revisions": [r.id for r in params.revisions]},
        )
        results: list[EvolveProcedureResult] = []
        for step, ready in zip(steps, prepared, strict=True):
            results.append(apply_revision(ctx, conn, step, gate_fn, ready).result)
    return ReviewDecideResult(revision_id=record.id, status=status, revisions=results)


def _carried(scope: str, revision: DependentRevision, actor: str) -> Revision:
    changes = body_of({f: getattr(revision, f, None) for f in BODY_FIELDS})
    return Revision(scope, revision.id, changes, revision.reason, actor=actor)


# A procedure as the write will find it: (name, body).
_Ahead = dict[str, tuple[str, dict[str, Any]]]
# What `prepare` takes: the procedure's name, what the gate compares, the revised body.
_Plan = tuple[str, Compared, dict[str, Any]]


def _prepare_carried(
    ctx: OpContext, scope: str, revision_id: str, steps: list[Revision]
) -> list[Prepared]:
    """Before the write, as an evolve does (embedding is slow; the write holds the lock):
    each carried revision's semantic signal and search vector.

    The write gates each one against the procedures as they will be then: the approved
    revision current, and each carried revision before it applied. The signal is computed
    against the same. Should one of those be quarantined instead, or another writer change a
    procedure in between, the pairs that changed go without the signal, as in an evolve, and
    a vector of text that is no longer the version's is not stored. A decision the write
    will refuse (no such revision, or one already decided) prepares nothing."""
    none = [Prepared() for _ in steps]
    if not steps:
        return none
    with ctx.runtime.store().reading(ctx.token) as conn:
        record = procedure_sql.get_version(conn, scope, revision_id)
        if record is None or record.status != "quarantined":
            return none
        ahead: _Ahead = {record.procedure_id: (record.name, record.body)}
        planned = [_plan(conn, ctx, scope, step, ahead) for step in steps]
    return [Prepared() if plan is None else prepare(ctx, *plan) for plan in planned]


def _plan(
    conn: apsw.Connection, ctx: OpContext, scope: str, step: Revision, ahead: _Ahead
) -> _Plan | None:
    """What `prepare` needs for one carried revision; the revision is then ahead of the
    next. None when its procedure does not exist (the write raises NotFound)."""
    if step.procedure_id not in ahead:
        current = procedure_sql.current_version(conn, scope, step.procedure_id)
        if current is None:
            return None
        ahead[step.procedure_id] = (current.name, current.body)
    name, before = ahead[step.procedure_id]
    after = {**before, **step.changes}
    old = pg.gate_procedure(step.procedure_id, name, before)
    new = pg.gate_procedure(step.procedure_id, name, after)
    kind = ctx.runtime.config.procedure_gate
    found = pg.candidates(conn, scope, old, new, kind, pg.scope_aliases(conn, scope))
    if kind != "latest_wins":  # the versions ahead replace those found, or join them
        then = {p.id: p for p in found}
        then |= {pid: pg.gate_procedure(pid, *version) for pid, version in ahead.items()}
        found = [p for pid, p in then.items() if pid != step.procedure_id]
    ahead[step.procedure_id] = (name, after)
    return name, (old, new, found), after


def audit(ctx: OpContext, params: AuditParams) -> AuditResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    after = cursors.decode("a1", params.cursor) or 0
    with ctx.runtime.store().reading(ctx.token) as conn:
        if params.procedure_id is not None and not procedure_sql.exists(
            conn, scope, params.procedure_id
        ):
            raise NotFound("procedure not found", id=params.procedure_id)
        entries = log_sql.entries(conn, scope, params.procedure_id, after, params.limit + 1)
    page, more = entries[: params.limit], len(entries) > params.limit
    return AuditResult(
        items=[
            AuditEntry(
                seq=e.seq,
                at=e.at,
                event=e.event,
                procedure_id=e.procedure_id,
                version_id=e.version_id,
                actor=e.actor,
                reason=e.reason,
                detail=e.detail,
            )
            for e in page
        ],
        next_cursor=cursors.encode("a1", page[-1].seq) if more else None,
    )
