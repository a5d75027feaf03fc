"""Undecided pairs in `procedure.evolve`: asking the client's judge, what its answers decide, and
the policy without one.

The session here is the real `memproc.server.session.Session`; only its two ends are test
doubles: the line it sends is kept instead of written to a pipe, and a continuation runs at once
instead of being queued behind the scope's other requests (the transport's part, tested in
tests/contract/test_contract_judge.py). The gate is a stub that leaves the one dependent
undecided, so each test exercises the settling alone.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import msgspec
import pytest

import storekit
from memproc import gate
from memproc.ops.context import OpContext
from memproc.ops.procedures import judging as procedure_judge
from memproc.ops.procedures import procedures
from memproc.ops.procedures import review as procedure_review
from memproc.runtime import Runtime
from memproc.server.session import Session
from memproc.wire import procedure_messages as pm
from memproc.wire.outbound import ClientReply

SCOPE = "proj"
WORLD = "libvips 8 on an old distribution"


def create(ctx: OpContext, name: str, steps: list[str]) -> str:
    params = msgspec.convert(
        {"scope": SCOPE, "name": name, "steps": [{"action": s} for s in steps]},
        pm.CreateProcedureParams,
    )
    return procedures.create(ctx, params).id


def undecided_gate(*, finding: bool = False, fail_after: int | None = None) -> Any:
    """A gate that leaves every candidate undecided (with `finding`, also flags it; with
    `fail_after`, raises on every call after that many)."""
    calls = [0]

    def run(
        old: gate.Procedure,
        new: gate.Procedure,
        found: Sequence[gate.Procedure],
        signals: gate.Signals,
    ) -> gate.Assessment:
        calls[0] += 1
        if fail_after is not None and calls[0] > fail_after:
            raise RuntimeError("the gate broke")
        pairs = [
            gate.Undecided(p.id, "world_knowledge", f"{WORLD}: {p.steps[0].action}") for p in found
        ]
        findings = [gate.Finding(p.id, "removed_output", "gone") for p in found if finding]
        return gate.Assessment(findings=findings, undecided=pairs)

    return run


class Client:
    """The client's end of a real Session: the requests and notifications it was sent."""

    def __init__(self, runtime: Runtime, *, judge: bool = True) -> None:
        self.runtime = runtime
        self.sent: list[dict[str, Any]] = []
        self.session = Session(send=self._receive, schedule=self._run)
        if judge:
            self.session.declare({"requests": {"gate/judge": {}}})
        self.ctx = OpContext(runtime=runtime, session=self.session)

    def _receive(self, line: bytes) -> None:
        self.sent.append(msgspec.json.decode(line))

    def _run(self, scope: str, then: Any, reply: ClientReply) -> None:
        then(self.ctx, reply)

    def questions(self) -> list[dict[str, Any]]:
        return [m for m in self.sent if m.get("method") == "gate/judge"]

    def settled(self) -> list[dict[str, Any]]:
        return [m["params"] for m in self.sent if m.get("method") == "gate/settled"]

    def answer(self, question: dict[str, Any], verdict: Any, reason: str = "") -> None:
        result = msgspec.json.encode({"verdict": verdict, "reason": reason})
        self.session.deliver(question["id"], msgspec.Raw(result), None)

    def refuse(self, question: dict[str, Any]) -> None:
        error = msgspec.json.encode({"code": -32601, "message": "no model here"})
        self.session.deliver(question["id"], None, msgspec.Raw(error))


def evolve(ctx: OpContext, pid: str, gate_fn: Any, step: str = "pin libvips==8.15.1") -> Any:
    params = pm.EvolveProcedureParams(
        scope=SCOPE, id=pid, reason="bump libvips", steps=[pm.ProcedureStep(action=step)]
    )
    return procedures.evolve_with(ctx, params, gate_fn)


@pytest.fixture(params=storekit.STORES)
def db(request: pytest.FixtureRequest, db_path: str) -> str:
    """The store of a test's one Runtime: an SQLite file, then a fresh PostgreSQL database."""
    return storekit.database(request, db_path)


@pytest.fixture
def pair(
    make_runtime: Callable[..., Runtime], db: str
) -> Iterator[Callable[..., tuple[Client, str, str]]]:
    clients: list[Client] = []

    def make(*, judge: bool = True, **settings: Any) -> tuple[Client, str, str]:
        runtime = make_runtime(db, embedder="none", reranker="none", **settings)
        client = Client(runtime, judge=judge)
        clients.append(client)
        producer = create(client.ctx, "maintain image libraries", ["compile deps/image.in"])
        dependent = create(client.ctx, "render thumbnails", ["install deps/image.txt"])
        return client, producer, dependent

    yield make
    # As a server does at the end of input: questions still open are settled now, while the
    # store is open, not by their deadline's timer after the test (and its database) is gone.
    for client in clients:
        client.session.client_gone()


def current_id(client: Client, pid: str) -> str:
    got = procedures.get(client.ctx, pm.GetProcedureParams(scope=SCOPE, id=pid))
    return got.procedure.version_id


def audit(client: Client, pid: str) -> list[pm.AuditEntry]:
    params = pm.AuditParams(scope=SCOPE, procedure_id=pid)
    return procedure_review.audit(client.ctx, params).items


def test_an_undecided_pair_is_answered_at_once_quarantined_and_then_asked(pair: Any) -> None:
    client, producer, dependent = pair()
    before = current_id(client, producer)
    result = evolve(client.ctx, producer, undecided_gate())
    assert result.status == "quarantined" and current_id(client, producer) == before
    assert [(f.dependent_id, f.pattern) for f in result.findings] == [(dependent, "awaiting_judge")]
    assert [(u.settled_by, u.outcome) for u in result.undecided] == [("pending", "asked")]
    (question,) = client.questions()
    params = msgspec.convert(question["params"], pm.JudgeParams)
    assert params.dependent.id == dependent and params.revision_id == result.version_id
    assert params.procedure_id == producer and params.why == "world_knowledge"
    assert '"verdict"' in params.prompt and "pin libvips==8.15.1" in params.prompt
    assert client.settled() == []


def test_a_safe_verdict_promotes_the_revision_and_says_so(pair: Any) -> None:
    client, producer, _ = pair()
    result = evolve(client.ctx, producer, undecided_gate())
    client.answer(client.questions()[0], "safe", "only the dev image changes")
    assert current_id(client, producer) == result.version_id
    (settled,) = client.settled()
    assert settled["status"] == "current" and settled["revision_id"] == result.version_id
    assert [(u["settled_by"], u["verdict"]) for u in settled["undecided"]] == [("judge", "safe")]
    approved = audit(client, producer)[-1]
    assert (approved.event, approved.actor) == ("approved", "judge")
    assert approved.detail["answers"][0]["reason"] == "only the dev image changes"
    assert "pin libvips" in approved.detail["answers"][0]["question"]["prompt"]


def test_a_breaks_verdict_keeps_it_quarantined_with_the_judges_finding(pair: Any) -> None:
    client, producer, dependent = pair()
    before = current_id(client, producer)
    result = evolve(client.ctx, producer, undecided_gate())
    client.answer(client.questions()[0], "breaks", "the old distribution cannot load libvips 8")
    assert current_id(client, producer) == before
    (settled,) = client.settled()
    assert settled["status"] == "quarantined"
    assert [(f["dependent_id"], f["pattern"]) for f in settled["findings"]] == [
        (dependent, "judge_breaks")
    ]
    listed = procedure_review.review_list(client.ctx, pm.ReviewListParams(scope=SCOPE)).items
    assert [(i.revision_id, [f.pattern for f in i.findings]) for i in listed] == [
        (result.version_id, ["judge_breaks"])
    ]
    judged = audit(client, producer)[-1]
    assert judged.event == "judged" and judged.detail["answers"][0]["verdict"] == "breaks"


@pytest.mark.parametrize("ending", ["refused", "timed_out", "client_gone", "malformed"])
def test_no_answer_falls_back_to_the_policy_and_says_why(pair: Any, ending: str) -> None:
    client, producer, dependent = pair(judge_timeout_s=0.05 if ending == "timed_out" else 30)
    before = current_id(client, producer)
    evolve(client.ctx, producer, undecided_gate())
    (question,) = client.questions()
    if ending == "refused":
        client.refuse(question)
    elif ending == "malformed":
        client.answer(question, "maybe")
    elif ending == "client_gone":
        client.session.client_gone()
    else:
        _wait_for(lambda: client.settled() != [])
    assert current_id(client, producer) == before
    (settled,) = client.settled() or [None]
    if ending == "client_gone":  # a gone client is sent nothing; the audit still says why
        assert settled is None
        assert audit(client, producer)[-1].detail["answers"][0]["outcome"] == "client_gone"
        return
    assert [(f["dependent_id"], f["pattern"]) for f in settled["findings"]] == [
        (dependent, "undecided")
    ]
    assert [(u["settled_by"], u["outcome"]) for u in settled["undecided"]] == [("policy", ending)]


def _wait_for(condition: Callable[[], bool]) -> None:
    """The time-out fires on a timer thread; wait for its continuation (bounded)."""
    import time

    deadline = time.monotonic() + 10
    while not condition():
        assert time.monotonic() < deadline, "the time-out never settled the question"
        time.sleep(0.01)


def test_the_promote_policy_lets_a_timed_out_question_through(pair: Any) -> None:
    client, producer, _ = pair(gate_undecided="promote", judge_timeout_s=0.05)
    result = evolve(client.ctx, producer, undecided_gate())
    assert result.status == "quarantined"  # while the question is out
    _wait_for(lambda: client.settled() != [])
    assert current_id(client, producer) == result.version_id
    assert (audit(client, producer)[-1].event, audit(client, producer)[-1].actor) == (
        "approved",
        "policy",
    )


def test_without_a_judge_the_default_policy_quarantines_and_nothing_is_asked(pair: Any) -> None:
    client, producer, _ = pair(judge=False)
    result = evolve(client.ctx, producer, undecided_gate())
    assert result.status == "quarantined" and client.sent == []
    assert [(u.settled_by, u.outcome) for u in result.undecided] == [("policy", "no_judge")]


def test_without_a_judge_the_promote_policy_promotes_at_once(pair: Any) -> None:
    client, producer, _ = pair(judge=False, gate_undecided="promote")
    result = evolve(client.ctx, producer, undecided_gate())
    assert result.status == "promoted" and result.findings == []
    assert [u.outcome for u in result.undecided] == ["no_judge"]


def test_a_revision_a_rule_already_quarantines_asks_no_judge(pair: Any) -> None:
    client, producer, _ = pair()
    result = evolve(client.ctx, producer, undecided_gate(finding=True))
    assert result.status == "quarantined" and client.questions() == []
    assert [f.pattern for f in result.findings] == ["removed_output"]
    assert [u.outcome for u in result.undecided] == ["not_asked"]


def test_a_failing_gate_fails_closed_and_asks_nothing(pair: Any) -> None:
    client, producer, _ = pair()
    result = evolve(client.ctx, producer, undecided_gate(fail_after=0))
    assert result.status == "quarantined" and result.reason == "gate_error"
    assert client.questions() == [] and result.undecided == []


def test_a_gate_that_fails_when_the_answer_comes_keeps_it_quarantined(pair: Any) -> None:
    client, producer, _ = pair()
    before = current_id(client, producer)
    evolve(client.ctx, producer, undecided_gate(fail_after=1))
    client.answer(client.questions()[0], "safe")
    assert current_id(client, producer) == before
    (settled,) = client.settled()
    assert settled["status"] == "quarantined"
    assert [f["pattern"] for f in settled["findings"]] == ["gate_error"]


def test_a_dependent_changed_meanwhile_is_settled_by_policy_not_by_the_old_answer(
    pair: Any,
) -> None:
    client, producer, dependent = pair()
    evolve(client.ctx, producer, undecided_gate())
    step = pm.ProcedureStep(action="install deps/image.txt --require-hashes")
    changed = pm.EvolveProcedureParams(scope=SCOPE, id=dependent, reason="hashes", steps=[step])
    assert procedures.evolve_with(client.ctx, changed, _nothing_gate).status == "promoted"
    client.answer(client.questions()[0], "safe")
    (settled,) = client.settled()
    assert settled["status"] == "quarantined"
    assert [(u["settled_by"], u["outcome"]) for u in settled["undecided"]] == [
        ("policy", "not_asked")
    ]


def _nothing_gate(*args: Any) -> gate.Assessment:
    return gate.Assessment()


def test_an_answer_after_the_procedure_moved_on_changes_nothing(pair: Any) -> None:
    client, producer, _ = pair()
    first = evolve(client.ctx, producer, undecided_gate())
    second = evolve(client.ctx, producer, _nothing_gate, step="pin libvips==8.16")
    assert second.status == "promoted"
    client.answer(client.questions()[0], "safe")
    assert current_id(client, producer) == second.version_id
    (settled,) = client.settled()
    assert (settled["revision_id"], settled["status"]) == (first.version_id, "quarantined")
    assert audit(client, producer)[-1].detail["note"] == "procedure changed"


def test_an_answer_after_a_review_decided_is_only_recorded(pair: Any) -> None:
    client, producer, _ = pair()
    result = evolve(client.ctx, producer, undecided_gate())
    decide = pm.ReviewDecideParams(
        scope=SCOPE, revision_id=result.version_id, decision="reject", actor="ana", reason="no"
    )
    procedure_review.review_decide(client.ctx, decide)
    client.answer(client.questions()[0], "safe")
    (settled,) = client.settled()
    assert settled["status"] == "rejected"
    assert audit(client, producer)[-1].detail["note"] == "reviewed meanwhile"


def test_questions_beyond_the_limit_are_settled_by_policy(pair: Any) -> None:
    client, producer, _ = pair()
    for i in range(procedure_judge.MAX_QUESTIONS):
        create(client.ctx, f"other dependent {i}", ["install deps/image.txt"])
    result = evolve(client.ctx, producer, undecided_gate())
    asked = client.questions()
    assert len(asked) == procedure_judge.MAX_QUESTIONS
    assert sorted(u.outcome for u in result.undecided).count("not_asked") == 1
    for question in asked:
        client.answer(question, "safe")
    (settled,) = client.settled()
    assert settled["status"] == "quarantined"  # the unasked pair: the policy, fail closed
