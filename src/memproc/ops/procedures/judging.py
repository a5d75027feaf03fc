"""Pairs the gate leaves undecided: asking the client's judge, and settling the rest by policy.

Why the judge is asked after the evolve is answered: a model may take seconds or minutes, and
nothing may wait on it (no lock, no worker, no other request). So an evolve with undecided
pairs, and no rule finding that quarantines it anyway, stores its revision quarantined (the
last good version stays current: fail closed), answers, and then sends one `gate/judge`
request per pair over the same stream. Each answer, refusal or time-out comes back as a write
ordered on the scope; when the last has come, the revision is gated again against the scope
as it is then, the answers are matched to the pairs found undecided again (by dependent and
question, so a dependent that changed meanwhile is settled by policy, not by an answer about
its older text), and the revision is promoted or stays quarantined for review. The client
hears the outcome as a `gate/settled` notification; the audit log keeps every question and
answer with its pair.

The questions live in memory only: if the service stops first, the revision simply stays
quarantined for review.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import apsw
import msgspec

from memproc import gate
from memproc.ops.context import OpContext
from memproc.ops.procedures import gating as pg
from memproc.ops.procedures import judge_prompt
from memproc.ops.procedures.views import finding_views
from memproc.store import procedure_log as log_sql
from memproc.store import procedures as procedure_sql
from memproc.wire.outbound import JUDGE, SETTLED, ClientReply
from memproc.wire.procedure_messages import (
    ChangeSet,
    Condition,
    Consumed,
    GateSettledParams,
    JudgedProcedure,
    JudgeOutcome,
    JudgeParams,
    JudgeVerdict,
    ProcedureStep,
    Produced,
    UndecidedPair,
    ValueChange,
)

# Questions one evolve may ask at most; further undecided pairs are settled by policy.
MAX_QUESTIONS = 8
Key = tuple[str, str, str]


@dataclass(frozen=True)
class Answer:
    outcome: JudgeOutcome
    params: JudgeParams
    verdict: Literal["breaks", "safe"] | None = None
    reason: str = ""


@dataclass
class Settled:
    findings: list[gate.Finding] = field(default_factory=list)
    pairs: list[UndecidedPair] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Judgement:
    """One evolve's questions to the judge, from the commit of its revision until the last
    question ends. Its continuations run as writes on one scope, so one at a time."""

    scope: str
    procedure_id: str
    revision_id: str
    parent_id: str
    gate_fn: pg.GateFunction
    similar: dict[tuple[str, str], float]
    questions: dict[Key, JudgeParams]
    answers: dict[Key, Answer] = field(default_factory=dict)


def key(undecided: gate.Undecided) -> Key:
    return undecided.dependent_id, undecided.why, undecided.detail


def can_ask(ctx: OpContext) -> bool:
    return ctx.session is not None and ctx.session.can(JUDGE)


def questions(
    ctx: OpContext,
    revision: tuple[str, str, str],
    versions: tuple[gate.Procedure, gate.Procedure, list[gate.Procedure]],
    assessment: gate.Assessment,
) -> dict[Key, JudgeParams]:
    """What to ask about an assessment made inside the write: nothing when a rule finding
    quarantines the revision anyway, or when the client declared no judge."""
    if assessment.findings or not assessment.undecided or not can_ask(ctx):
        return {}
    scope, reason, revision_id = revision
    old, new, found = versions
    by_id = {p.id: p for p in found}
    asked: dict[Key, JudgeParams] = {}
    for undecided in assessment.undecided:
        dependent = by_id.get(undecided.dependent_id)
        if dependent is None or len(asked) == MAX_QUESTIONS:
            continue
        where = (scope, old.id, revision_id, reason)
        asked[key(undecided)] = question(where, old, new, dependent, undecided)
    return asked


def settle(
    ctx: OpContext,
    assessment: gate.Assessment,
    answers: dict[Key, Answer],
    asking: dict[Key, JudgeParams] | None = None,
) -> Settled:
    """Turn each undecided pair into the judge's verdict, a question still out (which
    quarantines until it ends), or the policy's decision."""
    settled = Settled()
    quarantined = bool(assessment.findings)
    policy = ctx.runtime.config.gate_undecided
    for undecided in assessment.undecided:
        answer = answers.get(key(undecided))
        if answer is not None and answer.outcome == "answered":
            _by_judge(settled, undecided, answer)
        elif asking and key(undecided) in asking:
            _pending(settled, undecided, asking[key(undecided)])
        else:
            outcome: Any = answer.outcome if answer else _why_not_asked(ctx, quarantined)
            pair = _pair(undecided, "policy", outcome)
            settled.pairs.append(pair)
            settled.audit.append(_audit(pair, answer.params if answer else None))
            if policy == "quarantine" and not quarantined:
                settled.findings.append(_policy_finding(undecided, outcome))
    return settled


def _pair(undecided: gate.Undecided, settled_by: Any, outcome: Any, **more: Any) -> UndecidedPair:
    return UndecidedPair(
        dependent_id=undecided.dependent_id,
        why=undecided.why,
        detail=undecided.detail,
        settled_by=settled_by,
        outcome=outcome,
        **more,
    )


def _why_not_asked(ctx: OpContext, quarantined: bool) -> Literal["no_judge", "not_asked"]:
    return "not_asked" if quarantined or can_ask(ctx) else "no_judge"


def _pending(settled: Settled, undecided: gate.Undecided, params: JudgeParams) -> None:
    pair = _pair(undecided, "pending", "asked")
    settled.pairs.append(pair)
    settled.audit.append(_audit(pair, params))
    settled.findings.append(
        gate.Finding(
            dependent_id=undecided.dependent_id,
            pattern="awaiting_judge",
            detail=(
                f"the rules cannot decide ({undecided.why}): {undecided.detail}; the client's "
                "judge has been asked, and the revision waits quarantined for its answer"
            ),
            evidence={"why": undecided.why},
        )
    )


def _by_judge(settled: Settled, undecided: gate.Undecided, answer: Answer) -> None:
    pair = _pair(undecided, "judge", "answered", verdict=answer.verdict, reason=answer.reason)
    settled.pairs.append(pair)
    settled.audit.append(_audit(pair, answer.params))
    if answer.verdict == "breaks":
        settled.findings.append(
            gate.Finding(
                dependent_id=undecided.dependent_id,
                pattern="judge_breaks",
                detail=f"the client's judge says the revision breaks it: {answer.reason}",
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


def _audit(pair: UndecidedPair, params: JudgeParams | None) -> dict[str, Any]:
    entry: dict[str, Any] = msgspec.to_builtins(pair)
    if params is not None:
        entry["question"] = {"why": params.why, "prompt": params.prompt}
    return entry


# -- asking, and what the answers decide ------------------------------------------------------


def send(ctx: OpContext, judgement: Judgement) -> None:
    """After the revision's commit: one `gate/judge` request per question. A question the
    session will not send (the client went away meanwhile) ends at once as `client_gone`."""
    assert ctx.session is not None
    timeout_s = ctx.runtime.config.judge_timeout_s
    for question_key, params in judgement.questions.items():
        then = _continuation(judgement, question_key)
        sent = ctx.session.ask(
            JUDGE,
            msgspec.to_builtins(params),
            scope=judgement.scope,
            timeout_s=timeout_s,
            then=then,
        )
        if not sent:
            judgement.answers[question_key] = Answer("client_gone", params)
    if len(judgement.answers) == len(judgement.questions):
        conclude(ctx, judgement)  # nothing went out: settle now, as the last answer would


def _continuation(judgement: Judgement, question_key: Key) -> Any:
    def then(ctx: OpContext, reply: ClientReply) -> None:
        judgement.answers[question_key] = answer_of(reply, judgement.questions[question_key])
        if len(judgement.answers) == len(judgement.questions):
            conclude(ctx, judgement)

    return then


def answer_of(reply: ClientReply, params: JudgeParams) -> Answer:
    """A reply as an answer; a result that is not a `JudgeVerdict` is `malformed`."""
    if reply.outcome != "answered" or reply.result is None:
        return Answer(reply.outcome, params, reason=reply.reason)
    try:
        verdict = msgspec.json.decode(reply.result, type=JudgeVerdict)
    except msgspec.ValidationError as exc:
        return Answer("malformed", params, reason=str(exc)[:500])
    return Answer("answered", params, verdict.verdict, verdict.reason)


def conclude(ctx: OpContext, judgement: Judgement) -> None:
    """Every question has ended: decide the revision in one write, then tell the client."""
    with ctx.runtime.store().writing(ctx.token) as conn:
        settled_params = _decide(ctx, conn, judgement)
    if ctx.session is not None:
        ctx.session.notify(SETTLED, msgspec.to_builtins(settled_params))


def _decide(ctx: OpContext, conn: apsw.Connection, judgement: Judgement) -> GateSettledParams:
    scope, revision_id = judgement.scope, judgement.revision_id
    record = procedure_sql.get_version(conn, scope, revision_id)
    assert record is not None  # versions are never deleted
    current = procedure_sql.current_version(conn, scope, judgement.procedure_id)
    answered = [_audit_answer(k, a) for k, a in judgement.answers.items()]
    if record.status != "quarantined" or current is None or current.id != judgement.parent_id:
        note = "reviewed meanwhile" if record.status != "quarantined" else "procedure changed"
        stale = {"answers": answered, "note": note}
        log_sql.append(conn, scope, record.procedure_id, revision_id, "judged", detail=stale)
        return _settled(judgement, record.status, record.findings, [])
    old, new = pg.of_record(current), pg.of_record(record)
    aliases = pg.scope_aliases(conn, scope)
    kind = ctx.runtime.config.procedure_gate
    found = pg.candidates(conn, scope, old, new, kind, aliases)
    signals = gate.Signals(judgement.similar, aliases, ctx.runtime.config.gate_ask_share)
    assessment, failed = pg.run(judgement.gate_fn, old, new, found, signals)
    settled = Settled() if failed else settle(ctx, assessment, judgement.answers)
    findings = [
        msgspec.to_builtins(v) for v in finding_views(assessment.findings + settled.findings)
    ]
    detail: dict[str, Any] = {"answers": answered, "findings": findings, "undecided": settled.audit}
    if findings:
        procedure_sql.set_findings(conn, revision_id, findings)
        log_sql.append(conn, scope, record.procedure_id, revision_id, "judged", detail=detail)
        return _settled(judgement, "quarantined", findings, settled.pairs)
    procedure_sql.promote(conn, scope, record)
    pg.index(conn, scope, new, record.body.get("refs", []))
    actor = "judge" if any(p.settled_by == "judge" for p in settled.pairs) else "policy"
    log_sql.append(
        conn, scope, record.procedure_id, revision_id, "approved", actor=actor, detail=detail
    )
    return _settled(judgement, "current", [], settled.pairs)


def _audit_answer(question_key: Key, answer: Answer) -> dict[str, Any]:
    dependent_id, why, detail = question_key
    return {
        "dependent_id": dependent_id,
        "why": why,
        "detail": detail,
        "outcome": answer.outcome,
        "verdict": answer.verdict,
        "reason": answer.reason,
        "question": {"why": answer.params.why, "prompt": answer.params.prompt},
    }


def _settled(
    judgement: Judgement, status: str, findings: list[Any], pairs: list[UndecidedPair]
) -> GateSettledParams:
    return msgspec.convert(
        {
            "scope": judgement.scope,
            "procedure_id": judgement.procedure_id,
            "revision_id": judgement.revision_id,
            "status": status,
            "findings": findings,
            "undecided": msgspec.to_builtins(pairs),
        },
        GateSettledParams,
    )


# -- the question -----------------------------------------------------------------------------


def question(
    where: tuple[str, str, str, str],
    old: gate.Procedure,
    new: gate.Procedure,
    dependent: gate.Procedure,
    undecided: gate.Undecided,
) -> JudgeParams:
    """`where`: (scope, procedure id, revision id, the revision's reason)."""
    scope, procedure_id, revision_id, reason = where
    changes = change_set(gate.changes(old, new))
    before, after, other = (judged_procedure(p) for p in (old, new, dependent))
    return JudgeParams(
        scope=scope,
        procedure_id=procedure_id,
        revision_id=revision_id,
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
