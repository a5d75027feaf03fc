"""The gate's judge through the real process: the client declares `gate/judge` at initialize,
the service asks it on the same stream after answering the evolve, and every way a question
can end (an answer, a refusal, a time-out, a client that goes away, a malformed answer) leaves
the revision where it belongs, with the reason in the audit log.

The client here is scripted (it answers what each test tells it to): the judge's accuracy is
the harness's model's business; what is under test is the protocol and what it decides.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from client import Client, Spawn

SCOPE = "proj"
JUDGE = {"requests": {"gate/judge": {}}}
FLAGS = ("--embedder", "none", "--reranker", "none")


def steps(*actions: str) -> list[dict[str, str]]:
    return [{"action": a} for a in actions]


def start(spawn: Spawn, *, judge: bool = True, **env: str) -> Client:
    server = spawn(*FLAGS, env=env)
    capabilities = JUDGE if judge else {}
    params = {"protocolVersion": "1.0", "capabilities": capabilities}
    initialized = server.result("initialize", params)
    assert "gate/judge" in initialized["capabilities"]["requests"]
    return server


def base_image_pair(server: Client) -> tuple[str, str]:
    """A producer and a dependent the rules cannot decide on: a new base image is a matter of
    knowing the component, which no rule pretends to."""
    producer = server.result(
        "procedure.create",
        {
            "scope": SCOPE,
            "name": "build the api base image",
            "steps": steps(
                "set FROM python:3.11-slim in docker/api.Dockerfile",
                "build docker/api.Dockerfile and push it",
            ),
        },
    )["id"]
    dependent = server.result(
        "procedure.create",
        {
            "scope": SCOPE,
            "name": "run the api test suite",
            "steps": steps("build docker/api.Dockerfile locally", "run pytest in the image"),
        },
    )["id"]
    return producer, dependent


def evolve(server: Client, producer: str) -> dict[str, Any]:
    return server.result(
        "procedure.evolve",
        {
            "scope": SCOPE,
            "id": producer,
            "reason": "newer python",
            "steps": steps(
                "set FROM python:3.13-slim in docker/api.Dockerfile",
                "build docker/api.Dockerfile and push it",
            ),
        },
    )


def current_version(server: Client, procedure_id: str) -> str:
    got = server.result("procedure.get", {"scope": SCOPE, "id": procedure_id})
    return str(got["procedure"]["version_id"])


def last_audit(server: Client, procedure_id: str) -> dict[str, Any]:
    items = server.result("procedure.audit", {"scope": SCOPE, "procedure_id": procedure_id})
    return dict(items["items"][-1])


def asked(spawn: Spawn, **env: str) -> tuple[Client, str, str, dict[str, Any], dict[str, Any]]:
    """A server that has answered an evolve and sent its one question."""
    server = start(spawn, **env)
    producer, dependent = base_image_pair(server)
    before = current_version(server, producer)
    evolved = evolve(server, producer)
    assert evolved["status"] == "quarantined"
    assert [(u["settled_by"], u["outcome"]) for u in evolved["undecided"]] == [("pending", "asked")]
    question = server.next_server_request("gate/judge")
    assert question["params"]["revision_id"] == evolved["version_id"]
    assert question["params"]["dependent"]["id"] == dependent
    assert current_version(server, producer) == before
    return server, producer, before, evolved, question


def test_a_safe_answer_promotes_and_the_client_hears_it(spawn: Spawn) -> None:
    server, producer, _, evolved, question = asked(spawn)
    params = question["params"]
    assert params["why"] == "world_knowledge" and "3.13-slim" in params["prompt"]
    assert [c["new"] for c in params["changes"]["changed_values"]] == ["3.13-slim"]
    server.answer(question["id"], {"verdict": "safe", "reason": "3.13 runs the suite"})
    settled = server.wait_notification("gate/settled")
    assert (settled["revision_id"], settled["status"]) == (evolved["version_id"], "current")
    assert current_version(server, producer) == evolved["version_id"]
    entry = last_audit(server, producer)
    assert (entry["event"], entry["actor"]) == ("approved", "judge")
    assert entry["detail"]["answers"][0]["reason"] == "3.13 runs the suite"


def test_a_breaks_answer_keeps_the_last_good_version_current(spawn: Spawn) -> None:
    server, producer, before, evolved, question = asked(spawn)
    server.answer(question["id"], {"verdict": "breaks", "reason": "C extensions lack 3.13 wheels"})
    settled = server.wait_notification("gate/settled")
    assert settled["status"] == "quarantined"
    assert [f["pattern"] for f in settled["findings"]] == ["judge_breaks"]
    assert current_version(server, producer) == before
    review = server.result("procedure.review.list", {"scope": SCOPE})["items"]
    assert [(i["revision_id"], i["findings"][0]["pattern"]) for i in review] == [
        (evolved["version_id"], "judge_breaks")
    ]
    assert last_audit(server, producer)["detail"]["answers"][0]["verdict"] == "breaks"


@pytest.mark.parametrize(
    ("answer", "outcome"),
    [
        ({"verdict": "perhaps"}, "malformed"),
        ("safe", "malformed"),
        ({"reason": "no verdict"}, "malformed"),
        (None, "refused"),
    ],
)
def test_a_refused_or_malformed_answer_leaves_it_to_the_policy(
    spawn: Spawn, answer: Any, outcome: str
) -> None:
    server, producer, before, _, question = asked(spawn)
    if answer is None:
        server.refuse(question["id"], message="no model configured")
    else:
        server.answer(question["id"], answer)
    settled = server.wait_notification("gate/settled")
    assert settled["status"] == "quarantined" and current_version(server, producer) == before
    assert [(u["settled_by"], u["outcome"]) for u in settled["undecided"]] == [("policy", outcome)]
    assert [f["pattern"] for f in settled["findings"]] == ["undecided"]


def test_no_answer_before_the_deadline_times_out_and_a_late_one_is_dropped(spawn: Spawn) -> None:
    server, producer, before, _, question = asked(spawn, MEMPROC_JUDGE_TIMEOUT_S="0.3")
    settled = server.wait_notification("gate/settled")
    assert [u["outcome"] for u in settled["undecided"]] == ["timed_out"]
    server.answer(question["id"], {"verdict": "safe"})  # too late: JSON-RPC answers no response
    server.ping()
    assert current_version(server, producer) == before
    assert server.notifications("gate/settled") == [settled]


def test_other_requests_never_wait_on_the_judge(spawn: Spawn) -> None:
    server, producer, before, _, question = asked(spawn)
    remembered = server.result(
        "memory.remember",
        {"scope": SCOPE, "kind": "fact", "content": "the api image is built from python"},
    )
    found = server.result("memory.search", {"scope": SCOPE, "query": "api image"})
    assert [r["id"] for r in found["results"]] == [remembered["id"]]
    assert current_version(server, producer) == before  # still waiting, still the old one
    assert server.server_requests() == [] and server.notifications("gate/settled") == []
    server.answer(question["id"], {"verdict": "safe"})
    assert server.wait_notification("gate/settled")["status"] == "current"


def test_a_client_that_goes_away_mid_question_leaves_it_quarantined(
    spawn: Spawn, db_path: Path
) -> None:
    server, producer, before, evolved, _ = asked(spawn)
    assert server.finish() == 0  # stdin closed with the question out: the service still exits 0
    again = spawn(*FLAGS)
    assert current_version(again, producer) == before
    review = again.result("procedure.review.list", {"scope": SCOPE})["items"]
    assert [i["revision_id"] for i in review] == [evolved["version_id"]]
    entry = last_audit(again, producer)
    assert entry["event"] == "judged"
    assert entry["detail"]["answers"][0]["outcome"] == "client_gone"


def test_a_client_that_declared_no_judge_is_asked_nothing(spawn: Spawn) -> None:
    server = start(spawn, judge=False)
    producer, _ = base_image_pair(server)
    evolved = evolve(server, producer)
    assert evolved["status"] == "quarantined"
    assert [(u["settled_by"], u["outcome"]) for u in evolved["undecided"]] == [
        ("policy", "no_judge")
    ]
    server.ping()
    assert server.server_requests() == [] and server.notifications("gate/settled") == []
