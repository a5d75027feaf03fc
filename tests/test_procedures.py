"""Procedure operations on each store (a real SQLite file, a real PostgreSQL database): evolve
promotes or quarantines in one transaction, a failing gate fails closed, reviews are the way
out, the audit is append-only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import apsw
import msgspec
import pytest

import storekit
from memproc.errors import Conflict, InvalidParams, MemprocError, NotFound
from memproc.ops.context import OpContext
from memproc.ops.memories import lifecycle
from memproc.ops.memories import memory as memory_ops
from memproc.ops.procedures import gating as pg
from memproc.ops.procedures import procedures
from memproc.ops.procedures import review as procedure_review
from memproc.runtime import Runtime
from memproc.store import citations
from memproc.store import procedures as procedure_sql
from memproc.wire import messages as m
from memproc.wire import procedure_messages as pm

SCOPE = "proj"


@pytest.fixture(params=storekit.STORES)
def runtime(
    request: pytest.FixtureRequest, make_runtime: Callable[..., Runtime], db_path: str
) -> Runtime:
    return make_runtime(storekit.database(request, db_path))


def create(ctx: OpContext, name: str, entities: list[str], steps: list[str], **kw: Any) -> str:
    params = msgspec.convert(
        {
            "scope": SCOPE,
            "name": name,
            "entity_names": entities,
            "steps": [{"action": s} for s in steps],
            **kw,
        },
        pm.CreateProcedureParams,
    )
    return procedures.create(ctx, params).id


def evolve(ctx: OpContext, pid: str, **kw: Any) -> pm.EvolveProcedureResult:
    if "steps" in kw:
        kw["steps"] = [{"action": s} for s in kw["steps"]]
    params = msgspec.convert(
        {"scope": SCOPE, "id": pid, "reason": "learned", **kw}, pm.EvolveProcedureParams
    )
    return procedures.evolve(ctx, params)


def statuses(ctx: OpContext, pid: str) -> list[str]:
    with ctx.runtime.store().reading() as conn:
        rows = conn.execute(
            storekit.sql(
                conn,
                "SELECT status FROM procedure_versions WHERE procedure_id = ? ORDER BY version",
            ),
            (pid,),
        )
        return [row[0] for row in rows]


@pytest.fixture
def pair(ctx: OpContext) -> tuple[str, str]:
    deploy = create(ctx, "deploy", ["Postgres"], ["push the release"])
    seed = create(ctx, "seed", ["Postgres"], ["insert demo rows into the accounts table"])
    return deploy, seed


BREAKING = {
    "steps": ["run migrations", "push"],
    "preconditions": ["every job must run migrations before it writes"],
}


def test_a_safe_revision_is_promoted_and_the_old_one_retired(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, _ = pair
    result = evolve(ctx, deploy, steps=["push the release", "tag it"])
    assert result.status == "promoted" and result.findings == []
    assert statuses(ctx, deploy) == ["retired", "current"]
    got = procedures.get(ctx, pm.GetProcedureParams(scope=SCOPE, id=deploy)).procedure
    assert got.version == 2 and got.version_id == result.version_id


def test_a_breaking_revision_is_quarantined_and_the_old_one_stays_current(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, seed = pair
    result = evolve(ctx, deploy, **BREAKING)
    assert result.status == "quarantined"
    assert [(f.dependent_id, f.pattern) for f in result.findings] == [(seed, "unmet_precondition")]
    assert statuses(ctx, deploy) == ["current", "quarantined"]
    listed = procedure_review.review_list(ctx, pm.ReviewListParams(scope=SCOPE))
    assert [item.revision_id for item in listed.items] == [result.version_id]
    assert listed.items[0].findings == result.findings


def test_a_failing_gate_quarantines_with_gate_error(ctx: OpContext, pair: tuple[str, str]) -> None:
    deploy, _ = pair

    def broken(*args: Any) -> list[Any]:
        raise RuntimeError("boom")

    params = pm.EvolveProcedureParams(
        scope=SCOPE, id=deploy, reason="x", steps=[pm.ProcedureStep(action="push faster")]
    )
    result = procedures.evolve_with(ctx, params, broken)
    assert result.status == "quarantined" and result.reason == "gate_error"
    assert [f.pattern for f in result.findings] == ["gate_error"]
    assert statuses(ctx, deploy) == ["current", "quarantined"]


@pytest.mark.parametrize("embedded_from_its_text", [True, False])
def test_a_vector_is_stored_only_with_the_text_it_was_embedded_from(
    ctx: OpContext, pair: tuple[str, str], embedded_from_its_text: bool
) -> None:
    """A vector is embedded before the write from the version read then; should another
    writer change the procedure in between, a vector of other text is not stored."""
    deploy, _ = pair
    changes = procedures.body_of({"steps": [pm.ProcedureStep(action="push the release twice")]})
    with ctx.runtime.store().reading() as conn:
        current = procedure_sql.current_version(conn, SCOPE, deploy)
    assert current is not None
    text = procedures.search_text(current.name, {**current.body, **changes})
    vector = procedures.SearchVector(text if embedded_from_its_text else "older", "fp", b"\0" * 8)
    step = procedures.Revision(SCOPE, deploy, changes, "twice")
    with ctx.runtime.store().writing() as conn:
        gate_fn = pg.GATES["memproc"]
        applied = procedures.apply_revision(
            ctx, conn, step, gate_fn, procedures.Prepared(vector=vector)
        )
    with ctx.runtime.store().reading() as conn:
        version = procedure_sql.get_version(conn, SCOPE, applied.result.version_id)
        assert version is not None
        stored = procedure_sql.vectors(conn, "fp", [version.seq])
    assert list(stored) == ([version.seq] if embedded_from_its_text else [])


def test_approving_promotes_and_carries_gated_dependent_revisions(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, seed = pair
    revision = evolve(ctx, deploy, **BREAKING)
    fix = pm.DependentRevision(
        id=seed,
        reason="run migrations first",
        steps=[pm.ProcedureStep(action="run migrations"), pm.ProcedureStep(action="insert rows")],
    )
    decided = procedure_review.review_decide(
        ctx,
        pm.ReviewDecideParams(
            scope=SCOPE,
            revision_id=revision.version_id,
            decision="approve",
            reason="ok",
            actor="lead",
            revisions=[fix],
        ),
    )
    assert decided.status == "current"
    assert [r.status for r in decided.revisions] == ["promoted"]
    assert statuses(ctx, deploy) == ["retired", "current"]
    assert statuses(ctx, seed) == ["retired", "current"]
    events = procedure_review.audit(ctx, pm.AuditParams(scope=SCOPE)).items
    assert [e.event for e in events] == ["created", "created", "evolved", "approved", "evolved"]
    assert events[3].actor == "lead"


def test_rejecting_keeps_the_old_version_and_a_decision_is_final(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, _ = pair
    revision = evolve(ctx, deploy, **BREAKING)
    decide = pm.ReviewDecideParams(
        scope=SCOPE, revision_id=revision.version_id, decision="reject", reason="no", actor="me"
    )
    assert procedure_review.review_decide(ctx, decide).status == "rejected"
    assert statuses(ctx, deploy) == ["current", "rejected"]
    with pytest.raises(Conflict):
        procedure_review.review_decide(ctx, decide)


def test_a_failed_approval_changes_nothing(ctx: OpContext, pair: tuple[str, str]) -> None:
    deploy, _ = pair
    revision = evolve(ctx, deploy, **BREAKING)
    ghost = pm.DependentRevision(
        id="no-such-procedure", reason="x", steps=[pm.ProcedureStep(action="noop")]
    )
    with pytest.raises(NotFound):
        procedure_review.review_decide(
            ctx,
            pm.ReviewDecideParams(
                scope=SCOPE,
                revision_id=revision.version_id,
                decision="approve",
                reason="ok",
                actor="lead",
                revisions=[ghost],
            ),
        )
    assert statuses(ctx, deploy) == ["current", "quarantined"]
    assert [e.event for e in procedure_review.audit(ctx, pm.AuditParams(scope=SCOPE)).items] == [
        "created",
        "created",
        "evolved",
    ]


def test_bad_input_gets_typed_errors_and_writes_nothing(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, _ = pair
    with pytest.raises(Conflict):
        create(ctx, "deploy", [], ["again"])
    with pytest.raises(NotFound):
        evolve(ctx, "missing", steps=["x"])
    with pytest.raises(InvalidParams):
        evolve(ctx, deploy)
    with pytest.raises(NotFound):
        evolve(ctx, deploy, steps=["x"], episode_id="missing")
    with pytest.raises(NotFound):
        create(ctx, "linked", [], ["x"], references=["missing"])
    assert statuses(ctx, deploy) == ["current"]


def test_one_current_version_is_enforced_by_the_schema(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, _ = pair
    evolve(ctx, deploy, **BREAKING)
    with pytest.raises(MemprocError), ctx.runtime.store().writing() as conn:
        conn.execute(
            storekit.sql(
                conn, "UPDATE procedure_versions SET status = 'current' WHERE procedure_id = ?"
            ),
            (deploy,),
        )
    assert statuses(ctx, deploy) == ["current", "quarantined"]


def test_the_audit_log_is_append_only(ctx: OpContext, pair: tuple[str, str]) -> None:
    for statement in ("UPDATE procedure_audit SET event = 'x'", "DELETE FROM procedure_audit"):
        with (
            pytest.raises((MemprocError, apsw.ConstraintError)),
            ctx.runtime.store().writing() as conn,
        ):
            conn.execute(statement)
    assert len(procedure_review.audit(ctx, pm.AuditParams(scope=SCOPE)).items) == 2


def test_references_are_cited_and_make_candidates(ctx: OpContext) -> None:
    build = create(ctx, "build", ["Bazel"], ["bazel build //..."])
    ship = create(ctx, "ship", ["Helm"], ["helm upgrade the chart"], references=[build])
    with ctx.runtime.store().reading() as conn:
        assert citations.citing(conn, SCOPE, f"procedure:{build}") == [f"procedure:{ship}"]
    # a demand on every job reaches `ship`, which shares nothing with `build` but the reference
    demand = ["every job warms the remote cache first"]
    result = evolve(ctx, build, steps=["bazel build //..."], preconditions=demand)
    assert [f.dependent_id for f in result.findings] == [ship]


def remember(ctx: OpContext, content: str, scope: str = SCOPE) -> str:
    params = m.RememberParams(scope=scope, kind="fact", content=content)
    return memory_ops.remember(ctx, params).id


def test_memory_refs_are_cited_so_the_memorys_impact_names_the_procedure(
    ctx: OpContext,
) -> None:
    port, host = remember(ctx, "the API listens on 8080"), remember(ctx, "the API host is api1")
    start = create(ctx, "start", ["API"], ["curl the API"], refs=[f"memory:{port}"])
    got = procedures.get(ctx, pm.GetProcedureParams(scope=SCOPE, id=start)).procedure
    assert got.refs == [f"memory:{port}"]
    invalidated = lifecycle.invalidate(
        ctx, m.InvalidateParams(scope=SCOPE, id=port, reason="moved to 9090")
    )
    assert [i.ref for i in invalidated.impact] == [f"procedure:{start}"]
    assert evolve(ctx, start, refs=[f"memory:{host}"]).status == "promoted"
    with ctx.runtime.store().reading() as conn:  # the current version's refs replace the old
        assert citations.cited_by(conn, SCOPE, f"procedure:{start}") == [f"memory:{host}"]
    superseded = lifecycle.supersede(
        ctx, m.SupersedeParams(scope=SCOPE, id=host, content="the API host is api2")
    )
    assert [i.ref for i in superseded.impact] == [f"procedure:{start}"]


def test_memory_refs_must_name_visible_memories_of_the_scope(ctx: OpContext) -> None:
    elsewhere = remember(ctx, "a fact of another scope", scope="other")
    for refs in ([f"memory:{elsewhere}"], ["memory:missing"]):
        with pytest.raises(InvalidParams) as raised:
            create(ctx, "linked", [], ["x"], refs=refs)
        assert raised.value.wire_data()["path"] == "$.params.refs[0]"
    deploy = create(ctx, "deploy", [], ["push"])
    with pytest.raises(InvalidParams):
        evolve(ctx, deploy, refs=[f"memory:{elsewhere}"])
    assert statuses(ctx, deploy) == ["current"]


def test_episodes_count_outcomes(ctx: OpContext, pair: tuple[str, str]) -> None:
    deploy, _ = pair
    for outcome in ("success", "failure", "failure"):
        params = pm.RecordEpisodeParams(scope=SCOPE, procedure_id=deploy, outcome=outcome)
        procedures.record_episode(ctx, params)
    got = procedures.get(ctx, pm.GetProcedureParams(scope=SCOPE, id=deploy)).procedure
    assert (got.success_count, got.failure_count) == (1, 2)
    with pytest.raises(NotFound):
        procedures.record_episode(
            ctx, pm.RecordEpisodeParams(scope=SCOPE, procedure_id="nope", outcome="success")
        )


def test_current_procedures_serves_current_versions_only(
    ctx: OpContext, pair: tuple[str, str]
) -> None:
    deploy, seed = pair
    quarantined = evolve(ctx, deploy, **BREAKING)
    with ctx.runtime.store().reading() as conn:
        current = procedure_sql.current_procedures(conn, SCOPE)
    assert {r.procedure_id for r in current} == {deploy, seed}
    assert quarantined.version_id not in {r.id for r in current}
    listed = procedures.list_procedures(ctx, pm.ListProceduresParams(scope=SCOPE, limit=1))
    assert len(listed.items) == 1 and listed.next_cursor is not None
    rest = procedures.list_procedures(
        ctx, pm.ListProceduresParams(scope=SCOPE, limit=5, cursor=listed.next_cursor)
    )
    assert {p.id for p in listed.items + rest.items} == {deploy, seed}


def test_a_scope_alias_links_a_dependent_the_gate_could_not_see(ctx: OpContext) -> None:
    """An alias the harness files makes a dependent a candidate and shares its entity; in
    another scope the alias means nothing."""
    from memproc.ops.procedures import entities

    def scene(scope: str) -> pm.EvolveProcedureResult:
        def make(name: str, entity: str, step: str) -> str:
            params = {"scope": scope, "name": name, "entity_names": [entity]}
            params["steps"] = [{"action": step}]
            return procedures.create(ctx, msgspec.convert(params, pm.CreateProcedureParams)).id

        ledger = make("rotate ledger credentials", "Ledger DB", "issue a new database user")
        make("nightly reconciliation", "books", "read journal rows from books")
        pre = ["every client of Ledger DB must reconnect with the new user"]
        evolve_params = {"scope": scope, "id": ledger, "reason": "r", "preconditions": pre}
        return procedures.evolve(ctx, msgspec.convert(evolve_params, pm.EvolveProcedureParams))

    alias = pm.EntityAliasParams(scope=SCOPE, name="Ledger DB", aliases=["Books", "ledger"])
    result = entities.alias(ctx, alias)
    assert (result.name, result.aliases) == ("ledger db", ["books", "ledger"])
    again = entities.alias(ctx, pm.EntityAliasParams(scope=SCOPE, name="ledger db", aliases=["gl"]))
    assert again.aliases == ["books", "gl", "ledger"]
    assert scene(SCOPE).status == "quarantined"
    assert scene("other").status == "promoted"
