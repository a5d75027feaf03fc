"""The way out of quarantine: `procedure.review.list`, `procedure.review.decide`, and
`procedure.audit`, the append-only record of every evolve and decision.

Approving promotes the quarantined revision and may carry revisions of the dependents it
affects, each gated in the same transaction: a reviewer fixes the dependents and lets the
revision through at once, or nothing changes.
"""

from __future__ import annotations

from typing import Literal

from memproc.errors import Conflict, NotFound
from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.ops.procedures import gating as pg
from memproc.ops.procedures.procedures import (
    BODY_FIELDS,
    Revision,
    apply_revision,
    body_of,
)
from memproc.ops.procedures.views import version_view
from memproc.store import procedure_log as log_sql
from memproc.store import procedures as procedure_sql
from memproc.wire.procedure_messages import (
    AuditEntry,
    AuditParams,
    AuditResult,
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
        for revision in params.revisions:
            changes = body_of({f: getattr(revision, f, None) for f in BODY_FIELDS})
            step = Revision(scope, revision.id, changes, revision.reason, actor=params.actor)
            results.append(apply_revision(ctx, conn, step, gate_fn, {}).result)
    return ReviewDecideResult(revision_id=record.id, status=status, revisions=results)


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
