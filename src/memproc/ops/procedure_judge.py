"""Pairs the gate leaves undecided: asking the client's judge, and settling the rest by policy.

The judge is asked outside any transaction (a model may take seconds; no lock waits on it),
only when no rule finding already quarantines the revision, and within one time budget per
evolve (`judge_timeout_s`). Its answers are matched to the pairs the gate finds undecided
again inside the write, by dependent and question, so a dependent that changed meanwhile is
settled by policy rather than by an answer about its older text. Every question and answer,
or why there was none, goes to the audit log with the pair.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import msgspec

from memproc import gate
from memproc.ops import judge_prompt
from memproc.ops.context import JudgeReply, OpContext
from memproc.ops.procedure_views import finding_views
from memproc.protocol.procedure_messages import (
    ChangeSet,
    Condition,
    Consumed,
    JudgedProcedure,
    JudgeParams,
    ProcedureStep,
    Produced,
    UndecidedPair,
    ValueChange,
)

log = logging.getLogger("memproc.procedures")

# Questions one evolve may ask at most; further undecided pairs are settled by policy.
MAX_QUESTIONS = 8
Key = tuple[str, str, str]


@dataclass(frozen=True)
class Answer:
    reply: JudgeReply
    params: JudgeParams


@dataclass
class Settled:
    findings: list[gate.Finding] = field(default_factory=list)
    pairs: list[UndecidedPair] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)


def key(undecided: gate.Undecided) -> Key:
    return undecided.dependent_id, undecided.why, undecided.detail


def ask(
    ctx: OpContext,
    scope: str,
    reason: str,
    old: gate.Procedure,
    new: gate.Procedure,
    found: list[gate.Procedure],
    assessment: gate.Assessment,
) -> dict[Key, Answer]:
    """The judge's answers for the undecided pairs of an assessment made before the write."""
    if ctx.judge is None or assessment.findings or not assessment.undecided:
        return {}
    by_id = {p.id: p for p in found}
    deadline = time.monotonic() + ctx.runtime.config.judge_timeout_s
    answers: dict[Key, Answer] = {}
    for undecided in assessment.undecided[:MAX_QUESTIONS]:
        dependent = by_id.get(undecided.dependent_id)
        if dependent is None:
            continue
        params = question(scope, reason, old, new, dependent, undecided)
        remaining = max(0.0, deadline - time.monotonic())
        answers[key(undecided)] = Answer(_call(ctx, params, remaining), params)
    return answers


def _call(ctx: OpContext, params: JudgeParams, timeout_s: float) -> JudgeReply:
    """One question; a judge that raises counts as unavailable (the policy then applies)."""
    assert ctx.judge is not None
    if timeout_s <= 0:
        return JudgeReply("timed_out")
    try:
        reply = ctx.judge(params, timeout_s)
    except Exception:
        log.exception("the judge failed; the policy settles the pair")
        return JudgeReply("unavailable")
    if reply.outcome == "answered" and reply.verdict not in ("breaks", "safe"):
        return JudgeReply("malformed", reason=reply.reason)
    return reply


def settle(ctx: OpContext, assessment: gate.Assessment, answers: dict[Key, Answer]) -> Settled:
    """Turn each undecided pair into a judge's verdict or the policy's decision."""
    settled = Settled()
    quarantined = bool(assessment.findings)
    policy = ctx.runtime.config.gate_undecided
    for undecided in assessment.undecided:
        answer = answers.get(key(undecided))
        if answer is not None and answer.reply.outcome == "answered":
            _by_judge(settled, undecided, answer)
            continue
        outcome: Any = answer.reply.outcome if answer else _why_not_asked(ctx)
        pair = UndecidedPair(
            dependent_id=undecided.dependent_id,
            why=undecided.why,
            detail=undecided.detail,
            settled_by="policy",
            outcome=outcome,
        )
        settled.pairs.append(pair)
        settled.audit.append(_audit(pair, answer))
        if policy == "quarantine" and not quarantined:
            settled.findings.append(_policy_finding(undecided, outcome))
    return settled


def _why_not_asked(ctx: OpContext) -> Literal["no_judge", "not_asked"]:
    return "no_judge" if ctx.judge is None else "not_asked"


def _by_judge(settled: Settled, undecided: gate.Undecided, answer: Answer) -> None:
    verdict = answer.reply.verdict
    pair = UndecidedPair(
        dependent_id=undecided.dependent_id,
        why=undecided.why,
        detail=undecided.detail,
        settled_by="judge",
        outcome="answered",
        verdict=verdict,
        reason=answer.reply.reason,
    )
    settled.pairs.append(pair)
    settled.audit.append(_audit(pair, answer))
    if verdict == "breaks":
        settled.findings.append(
            gate.Finding(
                dependent_id=undecided.dependent_id,
                pattern="judge_breaks",
                detail=f"the client's judge says the revision breaks it: {answer.reply.reason}",
                evidence={"question": undecided.detail, "why": undecided.why},
            )
        )


def _policy_finding(undecided: gate.Undecided, outcome: str) -> gate.Finding:
    return gate.Finding(
        dependent_id=undecided.dependent_id,
        pattern="undecided",
        detail=(
            f"the rules cannot decide ({undecided.why}): {undecided.detail}; no judge's "
            f"answer ({outcome}), so it is quarantined for review"
        ),
        evidence={"why": undecided.why, "outcome": outcome},
    )


def _audit(pair: UndecidedPair, answer: Answer | None) -> dict[str, Any]:
    entry: dict[str, Any] = msgspec.to_builtins(pair)
    if answer is not None:
        entry["question"] = {"why": answer.params.why, "prompt": answer.params.prompt}
    return entry


# -- the question -----------------------------------------------------------------------------


def question(
    scope: str,
    reason: str,
    old: gate.Procedure,
    new: gate.Procedure,
    dependent: gate.Procedure,
    undecided: gate.Undecided,
) -> JudgeParams:
    changes = change_set(gate.changes(old, new))
    before, after, other = (judged_procedure(p) for p in (old, new, dependent))
    return JudgeParams(
        scope=scope,
        reason=reason,
        why=undecided.why,
        detail=undecided.detail,
        changes=changes,
        old=before,
        revision=after,
        dependent=other,
        findings=finding_views(undecided.findings),
        prompt=judge_prompt.render(reason, undecided.detail, changes, before, after, other),
    )


def change_set(changes: gate.Changes) -> ChangeSet:
    def values(items: list[gate.ValueChange]) -> list[ValueChange]:
        return [ValueChange(key=c.key, old=c.old, new=c.new, where=c.where) for c in items]

    return ChangeSet(
        added_steps=changes.added_steps,
        removed_steps=changes.removed_steps,
        moved_steps=changes.moved_steps,
        changed_values=values(changes.changed_values),
        added_preconditions=changes.added_preconditions,
        removed_preconditions=changes.removed_preconditions,
        contract=values(changes.contract),
    )


def judged_procedure(procedure: gate.Procedure) -> JudgedProcedure:
    preconditions: list[Any] = [
        Condition(text=text, binds=binds) if (binds := procedure.declared_binds(text)) else text
        for text in procedure.preconditions
    ]
    preconditions += [Condition(key=k, value=v) for k, v in procedure.conditions]
    return JudgedProcedure(
        id=procedure.id,
        name=procedure.name,
        steps=[ProcedureStep(action=s.action, detail=s.detail) for s in procedure.steps],
        preconditions=preconditions,
        entity_names=list(procedure.entity_names),
        trigger=procedure.trigger or None,
        produces=[msgspec.convert(p, Produced, from_attributes=True) for p in procedure.produces],
        consumes=[
            Consumed(id=c.id, from_=c.source, format=c.format, version=c.version)
            for c in procedure.consumes
        ],
    )
