"""`memproc serve --mcp` over time: cancellation, a client that goes away mid-request, progress
notifications, and the gate's judge asked as `sampling/createMessage`.

The judge's answers are scripted: what is under test is the protocol and what it decides, not
the model (tests/contract/test_contract_judge.py covers the judge's outcomes in depth over
memproc's own `gate/judge`; the same code settles them here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from client import SLOW_SERVER, Client, Spawn
from mcpkit import call, ok, start, tool_result

FLAGS = ("--embedder", "none", "--reranker", "none")
SCOPE = "proj"
SAMPLING: dict[str, Any] = {"sampling": {}}


# -- cancellation and the end of input ---------------------------------------------------------


def test_a_cancelled_call_is_not_answered_and_writes_nothing(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, wrapper=SLOW_SERVER)
    arguments = {"scope": SCOPE, "kind": "note", "content": "block-insert w never stored"}
    write = call(server, "memory_remember", arguments)
    server.wait_started("w")
    server.notify("notifications/cancelled", {"requestId": write, "reason": "user pressed stop"})
    # Ordered after the write on its scope: once it is answered, the write has ended.
    listed = ok(server, "memory_list", {"scope": SCOPE})
    assert listed["items"] == []
    server.ping()
    assert server.responses(write) == []


def test_a_cancelled_queued_call_is_dropped_too(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, wrapper=SLOW_SERVER)
    blocking = call(server, "memory_search", {"scope": SCOPE, "query": "block s"})
    server.wait_started("s")
    queued = call(server, "memory_remember", {"scope": SCOPE, "kind": "note", "content": "later"})
    server.notify("notifications/cancelled", {"requestId": queued})
    server.release("s")
    assert tool_result(server, blocking)["isError"] is False
    assert ok(server, "memory_list", {"scope": SCOPE})["items"] == []
    assert server.responses(queued) == []


def test_a_cancel_after_the_answer_changes_nothing(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS)
    done = call(server, "memory_remember", {"scope": SCOPE, "kind": "note", "content": "kept"})
    memory_id = tool_result(server, done)["structuredContent"]["id"]
    server.notify("notifications/cancelled", {"requestId": done})
    got = ok(server, "memory_get", {"scope": SCOPE, "id": memory_id})
    assert got["memory"]["content"] == "kept"
    assert len(server.responses(done)) == 1


def test_closing_stdin_mid_request_answers_everything_and_loses_nothing(
    spawn: Spawn, db_path: Path
) -> None:
    server = start(spawn, *FLAGS)
    ids = [
        call(server, "memory_remember", {"scope": SCOPE, "kind": "fact", "content": f"fact {n}"})
        for n in range(40)
    ]
    assert server.finish() == 0
    stored = [tool_result(server, request_id)["structuredContent"]["id"] for request_id in ids]
    again = start(spawn, *FLAGS, db=db_path)
    for memory_id in stored:
        assert ok(again, "memory_get", {"scope": SCOPE, "id": memory_id})["memory"]["id"] == (
            memory_id
        )


def test_a_call_cancelled_by_the_shutdown_deadline_is_answered(spawn: Spawn) -> None:
    """Unlike a call the client cancelled, one the server gives up on is owed an answer."""
    deadline = {"MEMPROC_SHUTDOWN_DEADLINE_S": "0.5"}
    server = start(spawn, *FLAGS, wrapper=SLOW_SERVER, env=deadline)
    content = "block-insert-quiet q never stored"
    stuck = call(server, "memory_remember", {"scope": SCOPE, "kind": "note", "content": content})
    server.wait_started("q")
    server.terminate()
    assert server.wait_exit(10.0) == 0
    result = tool_result(server, stuck)
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == -32800


# -- progress ----------------------------------------------------------------------------------


def progress_of(server: Client, token: Any) -> list[dict[str, Any]]:
    every = server.notifications("notifications/progress")
    return [params for params in every if params["progressToken"] == token]


def test_remember_batch_reports_progress_to_a_caller_with_a_token(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS)
    items = [{"kind": "note", "content": f"note {n}"} for n in range(5)]
    token = {"progressToken": "batch-1"}
    batch = call(server, "memory_remember_batch", {"scope": SCOPE, "items": items}, meta=token)
    assert len(tool_result(server, batch)["structuredContent"]["results"]) == 5
    (final,) = progress_of(server, "batch-1")  # no embedder: nothing to embed, one step
    assert (final["progress"], final["total"]) == (5, 5)
    quiet = call(server, "memory_remember_batch", {"scope": SCOPE, "items": items[:1]})
    tool_result(server, quiet)
    assert len(server.notifications("notifications/progress")) == 1


def test_progress_counts_the_memories_embedded_then_stored(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    models = tmp_path / "models"
    models.mkdir()
    (models / minilm_dir.name).symlink_to(minilm_dir, target_is_directory=True)
    wait = {"MEMPROC_MODEL_WAIT_S": "120"}
    server = start(spawn, "--models-dir", str(models), "--reranker", "none", env=wait)
    # A dense search waits for the embedder to load (up to model_wait_s).
    ok(server, "memory_search", {"scope": SCOPE, "query": "x", "mode": "dense"}, timeout=120)
    items = [{"kind": "note", "content": f"the {n}th note about deploys"} for n in range(70)]
    token = {"progressToken": 7}
    batch = call(server, "memory_remember_batch", {"scope": SCOPE, "items": items}, meta=token)
    tool_result(server, batch, timeout=60)
    steps = [(p["progress"], p["total"]) for p in progress_of(server, 7)]
    assert steps == [(32, 140), (64, 140), (70, 140), (140, 140)]
    answer = next(i for i, line in enumerate(server.lines) if b'"id":%d,' % batch in line)
    last = max(i for i, line in enumerate(server.lines) if b'"progressToken":7' in line)
    assert last < answer


# -- the judge as sampling -----------------------------------------------------------------------


def steps(*actions: str) -> list[dict[str, str]]:
    return [{"action": action} for action in actions]


def evolve_base_image(server: Client) -> tuple[str, dict[str, Any]]:
    """A producer, a dependent, and a revision the rules cannot decide (a new base image)."""
    producer = ok(
        server,
        "procedure_create",
        {
            "scope": SCOPE,
            "name": "build the api base image",
            "steps": steps(
                "set FROM python:3.11-slim in docker/api.Dockerfile",
                "build docker/api.Dockerfile and push it",
            ),
        },
    )["id"]
    ok(
        server,
        "procedure_create",
        {
            "scope": SCOPE,
            "name": "run the api test suite",
            "steps": steps("build docker/api.Dockerfile locally", "run pytest in the image"),
        },
    )
    evolved = ok(
        server,
        "procedure_evolve",
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
    return producer, evolved


def settled(server: Client) -> dict[str, Any]:
    message = server.wait_notification("notifications/message")
    assert (message["level"], message["logger"]) == ("notice", "memproc.gate")
    data: dict[str, Any] = message["data"]
    assert data["event"] == "gate/settled"
    return data


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "scripted"}


def test_the_judge_is_asked_by_sampling_and_its_verdict_promotes(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, capabilities=SAMPLING)
    producer, evolved = evolve_base_image(server)
    assert evolved["status"] == "quarantined"
    assert [(u["settled_by"], u["outcome"]) for u in evolved["undecided"]] == [("pending", "asked")]
    question = server.next_server_request("sampling/createMessage")
    params = question["params"]
    (message,) = params["messages"]
    assert message["role"] == "user" and message["content"]["type"] == "text"
    assert "3.13-slim" in message["content"]["text"] and '"verdict"' in params["systemPrompt"]
    assert params["maxTokens"] > 0
    server.answer(
        question["id"],
        reply('Looking at it:\n```json\n{"verdict": "safe", "reason": "3.13 runs it"}\n```'),
    )
    outcome = settled(server)
    assert (outcome["revision_id"], outcome["status"]) == (evolved["version_id"], "current")
    got = ok(server, "procedure_get", {"scope": SCOPE, "id": producer})
    assert got["procedure"]["version_id"] == evolved["version_id"]
    audit = ok(server, "procedure_audit", {"scope": SCOPE, "procedure_id": producer})["items"]
    assert (audit[-1]["event"], audit[-1]["actor"]) == ("approved", "judge")
    assert audit[-1]["detail"]["answers"][0]["reason"] == "3.13 runs it"


def test_a_reply_without_a_verdict_is_malformed_and_the_policy_decides(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, capabilities=SAMPLING)
    producer, evolved = evolve_base_image(server)
    question = server.next_server_request("sampling/createMessage")
    server.answer(question["id"], reply('I think it is {"verdict": "probably fine"}.'))
    outcome = settled(server)
    assert outcome["status"] == "quarantined"
    assert [(u["settled_by"], u["outcome"]) for u in outcome["undecided"]] == [
        ("policy", "malformed")
    ]
    got = ok(server, "procedure_get", {"scope": SCOPE, "id": producer})
    assert got["procedure"]["version_id"] != evolved["version_id"]


def test_a_refused_sampling_request_is_settled_by_the_policy(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, capabilities=SAMPLING)
    evolve_base_image(server)
    question = server.next_server_request("sampling/createMessage")
    server.refuse(question["id"], code=-1, message="User rejected sampling request")
    assert [u["outcome"] for u in settled(server)["undecided"]] == ["refused"]


def test_without_sampling_the_policy_decides_at_once(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS)
    _, evolved = evolve_base_image(server)
    assert evolved["status"] == "quarantined"
    assert [(u["settled_by"], u["outcome"]) for u in evolved["undecided"]] == [
        ("policy", "no_judge")
    ]
    server.ping()
    assert server.server_requests() == []


def test_a_log_level_above_notice_silences_the_settled_message(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, capabilities=SAMPLING)
    assert server.result("logging/setLevel", {"level": "warning"}) == {}
    producer, _ = evolve_base_image(server)
    question = server.next_server_request("sampling/createMessage")
    server.answer(question["id"], reply('{"verdict": "breaks", "reason": "no wheels"}'))
    # The answer is settled as a write on the scope, ordered before this read: once the read
    # is answered, the settled message would have been sent.
    audit = ok(server, "procedure_audit", {"scope": SCOPE, "procedure_id": producer})["items"]
    assert audit[-1]["event"] == "judged"
    assert server.notifications("notifications/message") == []
