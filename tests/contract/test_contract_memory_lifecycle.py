"""The memory lifecycle through the real process: every new method, every illegal transition,
refs and impact, and a purge that leaves no byte of the content in the files."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from client import Client, Spawn, assert_error


@pytest.fixture(scope="module")
def server(module_spawn: Spawn) -> Iterator[Client]:
    yield module_spawn()


@pytest.fixture
def scope() -> str:
    """A fresh scope per test, so tests sharing one server never see each other's memories."""
    return f"lifecycle-{uuid.uuid4()}"


def remember(client: Client, scope: str, content: str, **extra: Any) -> str:
    params = {"scope": scope, "kind": "fact", "content": content, **extra}
    result = client.result("memory.remember", params)
    assert result["created"] is True, result
    return str(result["id"])


def call(client: Client, method: str, scope: str, memory_id: str, **extra: Any) -> Any:
    return client.call(f"memory.{method}", {"scope": scope, "id": memory_id, **extra})


def ok(client: Client, method: str, scope: str, memory_id: str, **extra: Any) -> Any:
    response = call(client, method, scope, memory_id, **extra)
    assert "result" in response, response
    return response["result"]


def get(client: Client, scope: str, memory_id: str) -> dict[str, Any]:
    return dict(ok(client, "get", scope, memory_id)["memory"])


def hits(client: Client, scope: str, query: str) -> list[dict[str, Any]]:
    return list(client.result("memory.search", {"scope": scope, "query": query})["results"])


def test_a_memory_through_its_whole_life(server: Client, scope: str) -> None:
    base = remember(server, scope, "the staging database is postgres 15")
    citer = remember(server, scope, "migrations target postgres", refs=[f"memory:{base}"])

    challenged = ok(server, "challenge", scope, base, reason="saw 16 in the compose file")
    assert challenged["status"] == "challenged" and challenged["changed"] is True
    assert [i["ref"] for i in challenged["impact"]] == [f"memory:{citer}"]
    memory = get(server, scope, base)
    assert memory["challenge"]["reason"] == "saw 16 in the compose file"
    (hit,) = [h for h in hits(server, scope, "staging database") if h["id"] == base]
    assert hit["status"] == "challenged" and hit["challenge"] == memory["challenge"]
    assert get(server, scope, citer)["rests_on_inactive"] == [
        {"ref": f"memory:{base}", "state": "challenged"}
    ]

    upheld = ok(server, "resolve", scope, base, outcome="upheld", reason="15 in production")
    assert (upheld["status"], upheld["impact"]) == ("active", [])
    assert get(server, scope, base)["challenge"] is None

    edited = ok(
        server,
        "edit",
        scope,
        base,
        content="the staging database is postgres 15.4",
        reason="precise",
    )
    assert edited == {"id": base, "revision": 2, "changed": True}

    superseded = ok(server, "supersede", scope, base, content="the staging database is postgres 16")
    successor = superseded["successor"]
    assert superseded["status"] == "superseded" and successor not in (None, base)
    assert [i["ref"] for i in superseded["impact"]] == [f"memory:{citer}"]
    assert get(server, scope, base)["successor"] == successor
    assert [h["id"] for h in hits(server, scope, "staging database")] == [successor]
    assert get(server, scope, citer)["rests_on_inactive"] == [
        {"ref": f"memory:{base}", "state": "superseded"}
    ]

    past = ok(server, "history", scope, base)
    assert [r["content"] for r in past["revisions"]] == [
        "the staging database is postgres 15",
        "the staging database is postgres 15.4",
    ]
    assert [(c["action"], c["previous"], c["status"]) for c in past["changes"]] == [
        ("remember", None, "active"),
        ("challenge", "active", "challenged"),
        ("uphold", "challenged", "active"),
        ("supersede", "active", "superseded"),
    ]
    assert past["changes"][-1]["successor"] == successor

    assert ok(server, "forget", scope, base)["changed"] is True
    purged = ok(server, "purge", scope, base, reason="tidy up")
    assert purged["status"] == "purged" and purged["checkpointed"] is True
    assert_error(call(server, "get", scope, base), -32002)
    assert_error(call(server, "history", scope, base), -32002)
    assert ok(server, "purge", scope, base, reason="again")["changed"] is False


def test_invalidate_and_resolve_invalidated(server: Client, scope: str) -> None:
    one = remember(server, scope, "the cache ttl is one hour")
    two = remember(server, scope, "the cache size is one gigabyte")
    assert (
        ok(server, "invalidate", scope, one, reason="ttl is 10 minutes")["status"] == "invalidated"
    )
    ok(server, "challenge", scope, two, reason="smaller?")
    assert ok(server, "resolve", scope, two, outcome="invalidated")["status"] == "invalidated"
    assert hits(server, scope, "cache") == []
    assert {get(server, scope, m)["status"] for m in (one, two)} == {"invalidated"}


def put_in(client: Client, scope: str, state: str) -> str:
    memory_id = remember(client, scope, f"a memory to be {state} {uuid.uuid4()}")
    steps = {
        "challenged": [("challenge", {"reason": "doubt"})],
        "superseded": [("supersede", {"content": f"its successor {uuid.uuid4()}"})],
        "invalidated": [("invalidate", {"reason": "wrong"})],
        "forgotten": [("forget", {})],
        "purged": [("purge", {"reason": "gone"})],
    }
    for method, extra in steps.get(state, []):
        ok(client, method, scope, memory_id, **extra)
    return memory_id


ATTEMPTS: dict[str, dict[str, Any]] = {
    "challenge": {"reason": "doubt"},
    "resolve": {"outcome": "upheld"},
    "supersede": {"content": "a brand new successor text"},
    "invalidate": {"reason": "wrong"},
    "forget": {},
    "purge": {"reason": "gone"},
    "edit": {"content": "new words", "reason": "fix"},
}
LEGAL = {
    "challenge": {"active"},
    "resolve": {"challenged"},
    "supersede": {"active", "challenged"},
    "invalidate": {"active", "challenged"},
    "forget": {"active", "challenged", "superseded", "invalidated", "forgotten"},
    "purge": {"active", "challenged", "superseded", "invalidated", "forgotten", "purged"},
    "edit": {"active", "challenged"},
}
STATES = ("active", "challenged", "superseded", "invalidated", "forgotten", "purged")
ILLEGAL = [(m, s) for m in ATTEMPTS for s in STATES if s not in LEGAL[m]]


@pytest.mark.parametrize(("method", "state"), ILLEGAL, ids="-".join)
def test_every_illegal_transition_is_a_conflict_naming_the_state(
    server: Client, scope: str, method: str, state: str
) -> None:
    memory_id = put_in(server, scope, state)
    listed = server.result("memory.list", {"scope": scope})
    response = call(server, method, scope, memory_id, **ATTEMPTS[method])
    data = assert_error(response, -32003)
    assert data["state"] == state and data["retryable"] is False
    assert "a memory to be" not in response["error"]["message"]
    assert server.result("memory.list", {"scope": scope}) == listed


@pytest.mark.parametrize(
    ("method", "extra", "path"),
    [
        ("supersede", {}, "$.params.content"),
        ("supersede", {"content": "x", "by": "y"}, "$.params.content"),
        ("resolve", {"outcome": "maybe"}, "$.params.outcome"),
        ("edit", {"content": "no reason given"}, "$.params"),
        (
            "edit",
            {"content": "bad ref", "reason": "r", "refs": ["evidence:e1"]},
            "$.params.refs[0]",
        ),
        ("challenge", {}, "$.params"),
        ("challenge", {"reason": "r", "colour": "red"}, "$.params"),
        ("purge", {}, "$.params"),
    ],
)
def test_bad_params_are_invalid_and_change_nothing(
    server: Client, scope: str, method: str, extra: dict[str, Any], path: str
) -> None:
    memory_id = remember(server, scope, "stays as it is")
    response = call(server, method, scope, memory_id, **extra)
    data = assert_error(response, -32602)
    assert data["path"] == path
    assert get(server, scope, memory_id)["status"] == "active"
    assert ok(server, "history", scope, memory_id)["revisions"][-1]["revision"] == 1


def test_refs_must_name_visible_memories_of_the_same_scope(server: Client, scope: str) -> None:
    elsewhere = remember(server, f"{scope}-other", "in another scope")
    forgotten = put_in(server, scope, "forgotten")
    for ref in (f"memory:{elsewhere}", f"memory:{forgotten}", "memory:no-such-memory"):
        params = {"scope": scope, "kind": "fact", "content": "cites", "refs": [ref]}
        assert_error(server.call("memory.remember", params), -32602, path="$.params.refs[0]")
    assert server.result("memory.list", {"scope": scope})["items"] == []


def test_lifecycle_methods_respect_the_allow_list(spawn: Spawn) -> None:
    open_server = spawn()
    other = remember(open_server, "other", "the other scope's secret")
    restricted = spawn("--scope", "allowed")
    for method, extra in [*ATTEMPTS.items(), ("history", {})]:
        response = call(restricted, method, "other", other, **extra)
        assert_error(response, -32004, path="$.params.scope")
    assert get(open_server, "other", other)["status"] == "active"
    assert ok(open_server, "history", "other", other)["revisions"][-1]["revision"] == 1


def test_a_purge_leaves_no_byte_of_the_content_in_the_files(spawn: Spawn, db_path: Path) -> None:
    server = spawn()
    marker = "qpzmvhwtrx"
    secret = remember(server, "s", f"the api key is {marker} and it leaked", tags=[marker])
    ok(server, "edit", "s", secret, content=f"the api key is {marker}v2 and it leaked", reason="r")
    remember(server, "s", "an unrelated memory about lunch")
    assert ok(server, "purge", "s", secret, reason="leaked key")["checkpointed"] is True
    assert server.finish() == 0
    for suffix in ("", "-wal", "-shm"):
        path = Path(f"{db_path}{suffix}")
        if path.exists():
            assert marker.encode() not in path.read_bytes(), f"marker left in {path.name}"
