"""Undecided pairs in `procedure.evolve`: the judge's answer, the policy without one, the audit.

The judge here is a plain Python function standing in for the client's model (which is not
what is under test); the gate is a stub that leaves the one dependent undecided, so each test
exercises the settling alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import pytest

from memproc import gate
from memproc.ops import procedure_review, procedures
from memproc.ops.context import JudgeOutcome, JudgeReply, OpContext
from memproc.protocol import procedure_messages as pm
from memproc.runtime import Runtime

SCOPE = "proj"


def create(ctx: OpContext, name: str, steps: list[str]) -> str:
    params = msgspec.convert(
        {"scope": SCOPE, "name": name, "steps": [{"action": s} for s in steps]},
        pm.CreateProcedureParams,
    )
    return procedures.create(ctx, params).id


def undecided_gate(*, finding: bool = False) -> procedures.pg.GateFunction:
    """A gate that leaves every candidate undecided (and, with `finding`, also flags it)."""

    def run(
        old: gate.Procedure,
        new: gate.Procedure,
        found: Sequence[gate.Procedure],
        signals: gate.Signals,
    ) -> gate.Assessment:
        pairs = [
            gate.Undecided(p.id, "world_knowledge", "libvips 8 on an old distribution")
            for p in found
        ]
        findings = [gate.Finding(p.id, "removed_output", "gone") for p in found if finding]
        return gate.Assessment(findings=findings, undecided=pairs)

    return run


def evolve(ctx: OpContext, pid: str, gate_fn: procedures.pg.GateFunction) -> Any:
    params = pm.EvolveProcedureParams(
        scope=SCOPE,
        id=pid,
        reason="bump libvips",
        steps=[pm.ProcedureStep(action="pin libvips==8.15.1 in deps/image.in")],
    )
    return procedures.evolve_with(ctx, params, gate_fn)


class Judge:
    """Answers with `reply`, or runs `during` (to show no lock is held), recording calls."""

    def __init__(self, reply: JudgeReply, during: Callable[[], None] | None = None) -> None:
        self.reply, self.during = reply, during
        self.calls: list[tuple[pm.JudgeParams, float]] = []

    def __call__(self, params: Any, timeout_s: float) -> JudgeReply:
        self.calls.append((params, timeout_s))
        if self.during is not None:
            self.during()
        return self.reply


@pytest.fixture
def pair(make_runtime: Callable[..., Runtime]) -> Callable[..., tuple[OpContext, str, str]]:
    def make(judge: Any = None, **settings: Any) -> tuple[OpContext, str, str]:
        runtime = make_runtime(embedder="none", reranker="none", **settings)
        setup = OpContext(runtime=runtime)
        producer = create(setup, "maintain image libraries", ["compile deps/image.in"])
        dependent = create(setup, "render thumbnails", ["install deps/image.txt"])
        return OpContext(runtime=runtime, judge=judge), producer, dependent

    return make


def audit_detail(ctx: OpContext, pid: str) -> dict[str, Any]:
    entries = procedure_review.audit(ctx, pm.AuditParams(scope=SCOPE, procedure_id=pid)).items
    return [e for e in entries if e.event == "evolved"][-1].detail


def test_a_breaks_verdict_quarantines_with_a_finding_from_the_judge(pair: Any) -> None:
    judge = Judge(JudgeReply("answered", "breaks", "the old distribution cannot load libvips 8"))
    ctx, producer, dependent = pair(judge)
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "quarantined"
    assert [(f.dependent_id, f.pattern) for f in result.findings] == [(dependent, "judge_breaks")]
    assert [(u.settled_by, u.verdict) for u in result.undecided] == [("judge", "breaks")]
    params, timeout = judge.calls[0]
    assert isinstance(params, pm.JudgeParams) and params.dependent.id == dependent
    assert params.why == "world_knowledge" and '"verdict"' in params.prompt
    assert "pin libvips==8.15.1" in params.prompt and 0 < timeout <= 30
    logged = audit_detail(ctx, producer)["undecided"][0]
    assert logged["verdict"] == "breaks" and logged["question"]["prompt"] == params.prompt


def test_a_safe_verdict_promotes_and_is_recorded(pair: Any) -> None:
    ctx, producer, _ = pair(Judge(JudgeReply("answered", "safe", "only the dev image changes")))
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "promoted" and result.findings == []
    assert [(u.settled_by, u.verdict) for u in result.undecided] == [("judge", "safe")]
    assert audit_detail(ctx, producer)["undecided"][0]["reason"] == "only the dev image changes"


@pytest.mark.parametrize("outcome", ["timed_out", "client_gone", "malformed", "refused"])
def test_no_answer_falls_back_to_the_policy_and_says_why(pair: Any, outcome: JudgeOutcome) -> None:
    ctx, producer, dependent = pair(Judge(JudgeReply(outcome)))
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "quarantined"
    assert [(f.dependent_id, f.pattern) for f in result.findings] == [(dependent, "undecided")]
    assert [(u.settled_by, u.outcome) for u in result.undecided] == [("policy", outcome)]


def test_without_a_judge_the_default_policy_quarantines(pair: Any) -> None:
    ctx, producer, _ = pair(None)
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "quarantined"
    assert [(u.settled_by, u.outcome) for u in result.undecided] == [("policy", "no_judge")]


def test_the_promote_policy_lets_an_unanswered_pair_through(pair: Any) -> None:
    ctx, producer, _ = pair(None, gate_undecided="promote")
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "promoted" and result.findings == []
    assert [u.outcome for u in result.undecided] == ["no_judge"]


def test_a_judge_that_raises_counts_as_unavailable(pair: Any) -> None:
    def broken() -> None:
        raise RuntimeError("the model crashed")

    ctx, producer, _ = pair(Judge(JudgeReply("answered", "safe"), during=broken))
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "quarantined"
    assert [u.outcome for u in result.undecided] == ["unavailable"]


def test_a_revision_a_rule_already_quarantines_asks_no_judge(pair: Any) -> None:
    judge = Judge(JudgeReply("answered", "safe"))
    ctx, producer, _ = pair(judge)
    result = evolve(ctx, producer, undecided_gate(finding=True))
    assert result.status == "quarantined" and judge.calls == []
    assert [f.pattern for f in result.findings] == ["removed_output"]
    assert [u.outcome for u in result.undecided] == ["not_asked"]


def test_no_lock_is_held_while_the_judge_thinks(pair: Any) -> None:
    """Another write commits while the judge is being asked: the evolve holds no
    transaction then, so nothing waits on a model."""
    holder: dict[str, OpContext] = {}

    def write_meanwhile() -> None:
        create(holder["ctx"], "written while judging", ["a step"])

    ctx, producer, _ = pair(Judge(JudgeReply("answered", "safe"), during=write_meanwhile))
    holder["ctx"] = OpContext(runtime=ctx.runtime)
    result = evolve(ctx, producer, undecided_gate())
    assert result.status == "promoted"
    listed = procedures.list_procedures(ctx, pm.ListProceduresParams(scope=SCOPE))
    assert "written while judging" in {p.name for p in listed.items}


def test_a_failing_gate_still_fails_closed_with_a_judge(pair: Any) -> None:
    judge = Judge(JudgeReply("answered", "safe"))
    ctx, producer, _ = pair(judge)

    def broken(*args: Any) -> gate.Assessment:
        raise RuntimeError("boom")

    result = evolve(ctx, producer, broken)
    assert result.status == "quarantined" and result.reason == "gate_error"
    assert judge.calls == [] and result.undecided == []


def test_the_judge_outcomes_are_one_set_on_both_sides() -> None:
    from typing import get_args

    wire = set(get_args(pm.JudgeOutcome))
    assert wire == set(get_args(JudgeOutcome))
