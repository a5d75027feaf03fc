"""`context.get`: what an agent needs to resume work in a project, within a character budget.

The context is assembled by a list of section builders, in priority order. Each reads its
candidates (newest or weightiest first, up to a window); then one packer walks the sections in
that order and admits whole items while they fit the budget, counting what it leaves out. Same
database, same request: same bytes out. It is a pure read: one snapshot, nothing written, no
access recorded, no file opened.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import apsw
import msgspec

from memproc.clock import format_ms, now_ms
from memproc.ops.checkpoints import checkpoint_view
from memproc.ops.context import OpContext
from memproc.ops.evidence.state import Judge
from memproc.ops.procedures.views import version_view
from memproc.ops.validation import normalize_time
from memproc.store import checkpoints as checkpoint_sql
from memproc.store import evidence as evidence_sql
from memproc.store import procedures as procedure_sql
from memproc.store import project_context as context_sql
from memproc.store.project_context import Order
from memproc.store.records import MemoryRecord
from memproc.wire.context_messages import (
    ContextCheckpoint,
    ContextEvidence,
    ContextGetParams,
    ContextGetResult,
    ContextItem,
    ContextMemory,
    ContextProcedure,
    ContextSection,
)
from memproc.wire.vocabulary import Status

# How many candidates each section reads at most (the newest, or the weightiest).
WINDOW = 50
# Evidence is judged record by record, so its window is the newest records, eligible or not.
EVIDENCE_WINDOW = 100


@dataclass(frozen=True)
class Reading:
    """What a section builder is given: one read snapshot of one scope."""

    conn: apsw.Connection
    scope: str
    task: str | None
    now: str
    as_of: str | None = None  # the moment memories are read as of; None: now, by status


@dataclass(frozen=True)
class Candidates:
    items: list[ContextItem]
    beyond_window: int = 0


SectionBuilder = Callable[[Reading], Candidates]


def get(ctx: OpContext, params: ContextGetParams) -> ContextGetResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    as_of = normalize_time(params.as_of, "$.params.as_of")
    with ctx.runtime.store().reading(ctx.token) as conn:
        reading = Reading(conn, scope, params.task, format_ms(now_ms()), as_of)
        candidates = [(name, build(reading)) for name, build in SECTIONS]
    sections, used = pack(candidates, params.budget_chars)
    return ContextGetResult(
        scope=scope,
        task=params.task,
        budget_chars=params.budget_chars,
        used_chars=used,
        truncated=any(section.omitted_for_budget for section in sections),
        sections=sections,
    )


def pack(candidates: list[tuple[str, Candidates]], budget: int) -> tuple[list[ContextSection], int]:
    """Admit whole items in priority order while they fit; a later, smaller item may still fit
    after a larger one was left out. Returns the sections and the characters used."""
    remaining, sections = budget, []
    for name, found in candidates:
        kept: list[ContextItem] = []
        for item in found.items:
            cost = item_cost(item)
            if cost <= remaining:
                kept.append(item)
                remaining -= cost
        sections.append(
            ContextSection(
                name=name,
                items=kept,
                omitted_for_budget=len(found.items) - len(kept),
                beyond_window=found.beyond_window,
            )
        )
    return sections, budget - remaining


def item_cost(item: ContextItem) -> int:
    """An item's size as the client will see it: characters of its compact JSON."""
    return len(msgspec.json.encode(item).decode("utf-8"))


# -- section builders, in priority order ----------------------------------------------------


def checkpoints(reading: Reading) -> Candidates:
    """The task's current checkpoint, or without a task every current one, newest first."""
    if reading.task is not None:
        newest = checkpoint_sql.newest(reading.conn, reading.scope, reading.task)
        rows = [] if newest is None or newest.cleared else [newest]
        return Candidates(items=[_checkpoint_item(row) for row in rows])
    rows = checkpoint_sql.list_current(reading.conn, reading.scope, before_seq=None, limit=WINDOW)
    beyond = checkpoint_sql.count_current(reading.conn, reading.scope) - len(rows)
    return Candidates(items=[_checkpoint_item(row) for row in rows], beyond_window=beyond)


def memories_of(kind: str, order: Order) -> SectionBuilder:
    """Live memories (active and challenged, each with its status) of one kind whose window
    holds now; with `as_of`, those that held true then, each with its state then."""

    def build(reading: Reading) -> Candidates:
        if reading.as_of is not None:
            held, total = context_sql.held_of_kind_at(
                reading.conn, reading.scope, kind, order, WINDOW, reading.as_of
            )
            return Candidates(
                items=[_memory_item(r, state) for r, state in held],
                beyond_window=total - len(held),
            )
        at = reading.now
        records = context_sql.live_of_kind(reading.conn, reading.scope, kind, order, WINDOW, at)
        total = context_sql.count_live_of_kind(reading.conn, reading.scope, kind, at)
        return Candidates(
            items=[_memory_item(r) for r in records], beyond_window=total - len(records)
        )

    return build


def procedures(reading: Reading) -> Candidates:
    """Current procedure versions only (one per procedure), oldest procedure first: a
    quarantined revision waits for review and a retired or rejected one is history."""
    records = procedure_sql.current_procedures(reading.conn, reading.scope)
    items: list[ContextItem] = [_procedure_item(r) for r in records[:WINDOW]]
    return Candidates(items=items, beyond_window=max(0, len(records) - WINDOW))


def evidence(reading: Reading) -> Candidates:
    """Eligible evidence among the newest records, each with its state; files are not checked
    (that is opt-in on evidence.get and evidence.list)."""
    rows = evidence_sql.list_page(
        reading.conn,
        reading.scope,
        claim=None,
        session=None,
        before_seq=None,
        limit=EVIDENCE_WINDOW,
    )
    judge = Judge(reading.conn, reading.scope, reading.now)
    items: list[ContextItem] = []
    for row in rows:
        payload, verdict = judge.judge(row)
        if payload is not None and verdict.eligible:
            items.append(
                ContextEvidence(
                    evidence_id=row.evidence_id,
                    claim=payload.claim,
                    outcome=payload.outcome,
                    state=verdict.state,
                    reason=verdict.reason,
                    observation=payload.observation,
                    provenance=payload.provenance,
                    observed_at=payload.observed_at,
                    expires_at=payload.expires_at,
                    source_refs=payload.source_refs,
                )
            )
    beyond = evidence_sql.count(reading.conn, reading.scope) - len(rows)
    return Candidates(items=items, beyond_window=beyond)


SECTIONS: tuple[tuple[str, SectionBuilder], ...] = (
    ("checkpoints", checkpoints),
    ("decisions", memories_of("decision", "recent")),
    ("errors", memories_of("error", "recent")),
    ("preferences", memories_of("preference", "weighty")),
    ("facts", memories_of("fact", "weighty")),
    ("procedures", procedures),
    ("evidence", evidence),
)


def _checkpoint_item(row: checkpoint_sql.CheckpointRow) -> ContextCheckpoint:
    return ContextCheckpoint(**msgspec.structs.asdict(checkpoint_view(row)))


def _procedure_item(record: procedure_sql.VersionRecord) -> ContextProcedure:
    view = version_view(record)
    return ContextProcedure(
        id=view.id,
        name=view.name,
        version=view.version,
        version_id=view.version_id,
        steps=view.steps,
        preconditions=view.preconditions,
        outputs=view.outputs,
        entity_names=view.entity_names,
        trigger=view.trigger,
        success_count=view.success_count,
        failure_count=view.failure_count,
    )


def _memory_item(record: MemoryRecord, state: Status | None = None) -> ContextMemory:
    return ContextMemory(
        id=record.id,
        kind=record.kind,
        content=record.content,
        status=state or record.status,
        tags=record.tags,
        importance=record.importance,
        created_at=record.created_at,
        occurred_at=record.occurred_at,
    )
