"""`context.get` on a real SQLite file: its sections, what it serves, the budget, and that it is
a pure read (the database files are byte-identical afterwards)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from evidencekit import DAY_MS, ago, file_bytes, file_ref, put, remember, set_status
from memproc.ops import checkpoints as checkpoint_ops
from memproc.ops import project_context
from memproc.ops.context import OpContext
from memproc.ops.evidence import evidence as evidence_ops
from memproc.ops.memories import memory as memory_ops
from memproc.ops.procedures import procedures
from memproc.ops.procedures import review as procedure_review
from memproc.runtime import Runtime
from memproc.wire import procedure_messages as pm
from memproc.wire.checkpoint_messages import (
    CheckpointGetParams,
    CheckpointListParams,
    CheckpointSaveParams,
)
from memproc.wire.context_messages import (
    BOUNDARY_STATEMENT,
    ContextGetParams,
    ContextGetResult,
    ContextSection,
)
from memproc.wire.evidence_messages import (
    ELIGIBILITY_NOTE,
    EvidenceGetParams,
    EvidenceListParams,
)
from memproc.wire.messages import GetParams, ListParams, RememberParams

SECTION_NAMES = [
    "checkpoints",
    "decisions",
    "errors",
    "preferences",
    "facts",
    "procedures",
    "evidence",
]


def context(ctx: OpContext, scope: str = "s", **params: Any) -> ContextGetResult:
    return project_context.get(ctx, ContextGetParams(scope=scope, **params))


def section(result: ContextGetResult, name: str) -> ContextSection:
    (found,) = [s for s in result.sections if s.name == name]
    return found


def item_ids(result: ContextGetResult, name: str) -> list[str]:
    return [
        getattr(item, "id", None) or getattr(item, "evidence_id", None) or item.task  # type: ignore[union-attr]
        for item in section(result, name).items
    ]


def save(ctx: OpContext, task: str, summary: str, scope: str = "s") -> None:
    checkpoint_ops.save(ctx, CheckpointSaveParams(scope=scope, task=task, summary=summary))


def test_an_empty_project_has_every_section_empty_and_the_boundary(ctx: OpContext) -> None:
    result = context(ctx)
    assert [s.name for s in result.sections] == SECTION_NAMES
    assert all(s.items == [] for s in result.sections)
    assert (result.used_chars, result.truncated) == (0, False)
    assert result.boundary == BOUNDARY_STATEMENT and "not instructions" in result.boundary
    assert result.note == ELIGIBILITY_NOTE
    assert section(result, "procedures").items == []


def test_sections_hold_their_kinds_and_only_live_memories_with_their_status(
    ctx: OpContext,
) -> None:
    ids = {
        name: remember(ctx, f"{name} memory", kind=kind)
        for name, kind in [
            ("decision", "decision"),
            ("error", "error"),
            ("preference", "preference"),
            ("fact", "fact"),
            ("challenged", "fact"),
            ("note", "note"),
            ("episode", "episode"),
        ]
    }
    for status in ("superseded", "invalidated", "forgotten", "purged"):
        ids[status] = remember(ctx, f"{status} fact")
        set_status(ctx, ids[status], status)
    set_status(ctx, ids["challenged"], "challenged")
    result = context(ctx)
    assert item_ids(result, "decisions") == [ids["decision"]]
    assert item_ids(result, "errors") == [ids["error"]]
    assert item_ids(result, "preferences") == [ids["preference"]]
    facts = section(result, "facts").items
    assert [(f.id, f.status) for f in facts] == [  # type: ignore[union-attr]
        (ids["challenged"], "challenged"),
        (ids["fact"], "active"),
    ]


def test_facts_and_preferences_come_weightiest_first_decisions_newest_first(
    ctx: OpContext,
) -> None:
    low = memory_ops.remember(ctx, _remember("minor fact", "fact", 0.1)).id
    high = memory_ops.remember(ctx, _remember("key fact", "fact", 0.9)).id
    first = remember(ctx, "first decision", kind="decision")
    second = remember(ctx, "second decision", kind="decision")
    result = context(ctx)
    assert item_ids(result, "facts") == [high, low]
    assert item_ids(result, "decisions") == [second, first]


def test_checkpoints_are_the_tasks_or_all_current_ones(ctx: OpContext) -> None:
    save(ctx, "a", "a started")
    save(ctx, "b", "b started")
    save(ctx, "a", "a halfway")
    assert [(c.task, c.revision) for c in section(context(ctx), "checkpoints").items] == [  # type: ignore[union-attr]
        ("a", 2),
        ("b", 1),
    ]
    assert item_ids(context(ctx, task="b"), "checkpoints") == ["b"]
    assert item_ids(context(ctx, task="none"), "checkpoints") == []


def test_only_eligible_evidence_is_served_each_with_its_state(ctx: OpContext) -> None:
    fact, disputed, gone = (remember(ctx, text) for text in ("one", "two", "three"))
    put(ctx, "ok", source_refs=[f"memory:{fact}"])
    put(ctx, "disputed", source_refs=[f"memory:{disputed}"])
    put(ctx, "gone", source_refs=[f"memory:{gone}"])
    put(ctx, "expired", observed_at=ago(2 * DAY_MS), expires_at=ago(DAY_MS))
    set_status(ctx, disputed, "challenged")
    set_status(ctx, gone, "superseded")
    items = section(context(ctx), "evidence").items
    assert [(e.evidence_id, e.state, e.reason) for e in items] == [  # type: ignore[union-attr]
        ("disputed", "stale", "source_challenged"),
        ("ok", "supported", None),
    ]


def create_procedure(ctx: OpContext, name: str, steps: list[str], scope: str = "s") -> str:
    params = msgspec.convert(
        {
            "scope": scope,
            "name": name,
            "entity_names": ["Postgres"],
            "steps": [{"action": s} for s in steps],
        },
        pm.CreateProcedureParams,
    )
    return procedures.create(ctx, params).id


def quarantine(ctx: OpContext, procedure_id: str, step: str, scope: str = "s") -> str:
    """A revision of `procedure_id` the gate quarantines (the gate fails, so it fails closed)."""
    params = msgspec.convert(
        {"scope": scope, "id": procedure_id, "reason": "r", "steps": [{"action": step}]},
        pm.EvolveProcedureParams,
    )

    def broken(*args: Any) -> list[Any]:
        raise RuntimeError("gate down")

    result = procedures.evolve_with(ctx, params, broken)
    assert result.status == "quarantined"
    return result.version_id


def evolve_procedure(ctx: OpContext, procedure_id: str, step: str) -> pm.EvolveProcedureResult:
    params = msgspec.convert(
        {"scope": "s", "id": procedure_id, "reason": "r", "steps": [{"action": step}]},
        pm.EvolveProcedureParams,
    )
    return procedures.evolve(ctx, params)


def test_procedures_are_their_current_versions_only(ctx: OpContext) -> None:
    deploy = create_procedure(ctx, "deploy", ["push the release"])
    backup = create_procedure(ctx, "backup", ["dump the database"])
    promoted = evolve_procedure(ctx, deploy, "push the release and tag it")
    assert promoted.status == "promoted"  # version 1 is retired now
    held = quarantine(ctx, backup, "quarantined step text")
    rejected = quarantine(ctx, deploy, "rejected step text")
    procedure_review.review_decide(
        ctx,
        pm.ReviewDecideParams(
            scope="s", revision_id=rejected, decision="reject", reason="no", actor="me"
        ),
    )
    items = section(context(ctx), "procedures").items
    assert [(p.id, p.version, p.version_id) for p in items] == [  # type: ignore[union-attr]
        (deploy, 2, promoted.version_id),
        (backup, 1, items[1].version_id),  # type: ignore[union-attr]
    ]
    assert held not in {p.version_id for p in items}  # type: ignore[union-attr]
    served = msgspec.json.encode(section(context(ctx), "procedures"))
    for absent in (b"quarantined step text", b"rejected step text", b'"push the release"'):
        assert absent not in served
    assert [s.action for s in items[0].steps] == ["push the release and tag it"]  # type: ignore[union-attr]
    assert b'"type":"procedure"' in served
    assert item_ids(context(ctx, scope="other"), "procedures") == []


def test_tampered_evidence_is_left_out(ctx: OpContext) -> None:
    put(ctx, "sealed")
    with ctx.runtime.store().writing() as conn:
        conn.execute("UPDATE evidence SET claim = 'edited'")
    assert section(context(ctx), "evidence").items == []


# -- the budget ---------------------------------------------------------------------------


def test_the_budget_admits_whole_items_in_priority_order_and_counts_the_rest(
    ctx: OpContext,
) -> None:
    save(ctx, "t", "resume here: " + "c" * 150)
    big = remember(ctx, "a long fact " + "f" * 300)
    small = memory_ops.remember(ctx, _remember("a short fact", "fact", 0.1)).id
    remember(ctx, "a decision " + "d" * 100, kind="decision")
    full = context(ctx, budget_chars=100_000)
    costs = {s.name: [project_context.item_cost(item) for item in s.items] for s in full.sections}
    budget = costs["checkpoints"][0] + costs["decisions"][0] + costs["facts"][1]
    assert costs["facts"][0] > costs["facts"][1]  # the big fact ranks first (importance 0.5)
    tight = context(ctx, budget_chars=budget)
    assert item_ids(tight, "checkpoints") == ["t"]
    assert item_ids(tight, "facts") == [small]  # the big one did not fit, the small one did
    assert big not in item_ids(tight, "facts")
    assert section(tight, "facts").omitted_for_budget == 1
    assert (tight.used_chars, tight.truncated) == (budget, True)
    assert tight == context(ctx, budget_chars=budget)  # deterministic
    encoded = msgspec.json.encode(tight)
    assert encoded == msgspec.json.encode(context(ctx, budget_chars=budget))


def test_a_tight_budget_prefers_the_checkpoint_to_facts(ctx: OpContext) -> None:
    remember(ctx, "a fact " + "f" * 80)
    save(ctx, "t", "the checkpoint " + "c" * 100)
    full = context(ctx)
    checkpoint_cost, fact_cost = (
        project_context.item_cost(section(full, name).items[0]) for name in ("checkpoints", "facts")
    )
    assert fact_cost <= checkpoint_cost  # either alone would fit: priority decides
    result = context(ctx, budget_chars=checkpoint_cost + fact_cost - 1)
    assert item_ids(result, "checkpoints") == ["t"]
    assert (section(result, "facts").items, section(result, "facts").omitted_for_budget) == ([], 1)
    assert result.used_chars == checkpoint_cost


def test_beyond_window_counts_what_was_not_considered(
    ctx: OpContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(project_context, "WINDOW", 2)
    monkeypatch.setattr(project_context, "EVIDENCE_WINDOW", 2)
    for i in range(5):
        remember(ctx, f"fact number {i}")
        put(ctx, f"e{i}")
    for task in "abc":
        save(ctx, task, "started")
    result = context(ctx)
    for name in ("facts", "evidence", "checkpoints"):
        found = section(result, name)
        expected = 1 if name == "checkpoints" else 3
        assert (len(found.items), found.beyond_window) == (2, expected), name


# -- a pure read ----------------------------------------------------------------------------


def test_reads_leave_the_database_files_byte_identical(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / "a.py").write_text("x = 1\n")
    scope = str(project.resolve())
    db = str(tmp_path / "pure.db")
    ctx = OpContext(runtime=make_runtime(db, project=scope))
    fact = remember(ctx, "the fact", scope=scope)
    remember(ctx, "a decision", scope=scope, kind="decision")
    put(ctx, scope=scope, source_refs=[f"memory:{fact}", file_ref(project / "a.py", "a.py")])
    save(ctx, "t", "where we are", scope=scope)
    deploy = create_procedure(ctx, "deploy", ["push the release"], scope=scope)
    held = quarantine(ctx, deploy, "held for review", scope=scope)
    before = file_bytes(db)
    assert before["-wal"], "the writes are still in the WAL, so it is compared too"
    for params in (ContextGetParams(scope=scope), ContextGetParams(scope=scope, task="t")):
        served = project_context.get(ctx, params)
        (procedure,) = section(served, "procedures").items
        assert (procedure.id, procedure.version) == (deploy, 1)  # type: ignore[union-attr]
        assert held not in msgspec.json.encode(served).decode()
    evidence_ops.get(ctx, EvidenceGetParams(scope=scope, evidence_id="e1", check_files=True))
    evidence_ops.list_evidence(ctx, EvidenceListParams(scope=scope, check_files=True))
    checkpoint_ops.get(ctx, CheckpointGetParams(scope=scope, task="t"))
    checkpoint_ops.list_checkpoints(ctx, CheckpointListParams(scope=scope))
    memory_ops.get(ctx, GetParams(scope=scope, id=fact))
    memory_ops.list_memories(ctx, ListParams(scope=scope))
    assert file_bytes(db) == before
    # The comparison can fail: a write does change the files.
    save(ctx, "t", "moved on", scope=scope)
    assert file_bytes(db) != before


def _remember(content: str, kind: str, importance: float) -> RememberParams:
    return RememberParams(scope="s", kind=kind, content=content, importance=importance)  # type: ignore[arg-type]
