"""Server-to-client calls on one stream: each ends exactly once, as answered, refused, timed
out, malformed or with the client gone, and its continuation is handed to the transport."""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from memproc.server.session import Session
from memproc.wire.outbound import ClientReply

JUDGE = "gate/judge"


class Wire:
    """Stands in for the transport around the session: what was sent, what was scheduled."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.settled: list[tuple[str, ClientReply]] = []
        self.event = threading.Event()

    def send(self, line: bytes) -> None:
        self.sent.append(msgspec.json.decode(line))

    def schedule(self, scope: str, then: Any, reply: ClientReply) -> None:
        self.settled.append((scope, reply))
        then(None, reply)
        self.event.set()


def session_with_judge(wire: Wire) -> Session:
    session = Session(send=wire.send, schedule=wire.schedule)
    session.declare({"requests": {JUDGE: {}}})
    return session


def ask(session: Session, timeout_s: float = 30.0) -> list[ClientReply]:
    got: list[ClientReply] = []
    sent = session.ask(
        JUDGE, {"q": 1}, scope="s", timeout_s=timeout_s, then=lambda ctx, r: got.append(r)
    )
    assert sent
    return got


def test_nothing_is_sent_to_a_client_that_did_not_declare_the_request() -> None:
    wire = Wire()
    session = Session(send=wire.send, schedule=wire.schedule)
    session.declare({"requests": {"something/else": {}}})
    assert not session.ask(JUDGE, {}, scope="s", timeout_s=1, then=lambda ctx, r: None)
    assert wire.sent == []


def test_an_answer_settles_its_call_once() -> None:
    wire = Wire()
    session = session_with_judge(wire)
    got = ask(session)
    (request,) = wire.sent
    assert (request["method"], request["params"]) == (JUDGE, {"q": 1})
    session.deliver(request["id"], msgspec.Raw(b'{"verdict":"safe"}'), None)
    session.deliver(request["id"], msgspec.Raw(b'{"verdict":"breaks"}'), None)  # late: dropped
    (reply,) = got
    assert reply.outcome == "answered" and bytes(reply.result or b"") == b'{"verdict":"safe"}'
    assert session.pending_count() == 0


def test_an_error_is_a_refusal_with_its_message() -> None:
    wire = Wire()
    session = session_with_judge(wire)
    got = ask(session)
    error = msgspec.Raw(b'{"code":-32601,"message":"no model here"}')
    session.deliver(wire.sent[0]["id"], None, error)
    assert [(r.outcome, r.reason) for r in got] == [("refused", "no model here")]


def test_no_answer_by_the_deadline_is_a_time_out() -> None:
    wire = Wire()
    got = ask(session_with_judge(wire), timeout_s=0.01)
    assert wire.event.wait(10)
    assert [r.outcome for r in got] == ["timed_out"]


def test_the_client_going_away_settles_every_call_and_stops_new_ones() -> None:
    wire = Wire()
    session = session_with_judge(wire)
    first, second = ask(session), ask(session)
    session.client_gone()
    assert [r.outcome for r in first + second] == ["client_gone", "client_gone"]
    assert not session.can(JUDGE)
    assert [scope for scope, _ in wire.settled] == ["s", "s"]
