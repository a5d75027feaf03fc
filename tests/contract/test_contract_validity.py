"""Validity in time through the real process: two timelines replayed with explicit moments
(a port that changes twice; a decision reversed and then restored), each queried with
`as_of` before, between and after the changes, by `memory.search` and `context.get`; history
asked for and marked; and bad windows or moments refused without a trace."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from client import Client, Spawn, assert_error

INVALID_PARAMS = -32602


@pytest.fixture(scope="module")
def server(module_spawn: Spawn) -> Iterator[Client]:
    yield module_spawn()


@pytest.fixture
def scope() -> str:
    """A fresh scope per test, so tests sharing one server never see each other's memories."""
    return f"validity-{uuid.uuid4()}"


def remember(client: Client, scope: str, kind: str, content: str, **extra: Any) -> str:
    params = {"scope": scope, "kind": kind, "content": content, **extra}
    result = client.result("memory.remember", params)
    assert result["created"] is True, result
    return str(result["id"])


def supersede(client: Client, scope: str, memory_id: str, content: str, moment: str) -> str:
    params = {"scope": scope, "id": memory_id, "content": content, "valid_from": moment}
    result = client.result("memory.supersede", params)
    assert result["status"] == "superseded", result
    return str(result["successor"])


def search(client: Client, scope: str, query: str, **extra: Any) -> list[dict[str, Any]]:
    params = {"scope": scope, "query": query, **extra}
    return list(client.result("memory.search", params)["results"])


def ids_as_of(client: Client, scope: str, query: str, as_of: str | None) -> list[str]:
    extra = {} if as_of is None else {"as_of": as_of}
    return [hit["id"] for hit in search(client, scope, query, **extra)]


def context_ids(client: Client, scope: str, section: str, as_of: str | None) -> list[str]:
    params: dict[str, Any] = {"scope": scope}
    if as_of is not None:
        params["as_of"] = as_of
    result = client.result("context.get", params)
    (found,) = [s for s in result["sections"] if s["name"] == section]
    return [item["id"] for item in found["items"]]


def get(client: Client, scope: str, memory_id: str) -> dict[str, Any]:
    return dict(client.result("memory.get", {"scope": scope, "id": memory_id})["memory"])


# -- timeline (a): a port that changes twice -------------------------------------------------


def port_timeline(client: Client, scope: str) -> tuple[str, str, str]:
    first = remember(
        client, scope, "fact", "the dev server listens on port 8080", valid_from="2024-01-01"
    )
    second = supersede(
        client, scope, first, "the dev server listens on port 8443", "2024-03-01T00:00:00Z"
    )
    third = supersede(
        client, scope, second, "the dev server listens on port 9443", "2024-06-01T09:30:00+02:00"
    )
    return first, second, third


def test_a_port_that_changes_twice_answers_for_each_moment(server: Client, scope: str) -> None:
    first, second, third = port_timeline(server, scope)
    query = "dev server port"
    assert ids_as_of(server, scope, query, "2023-12-31T23:59:59Z") == []
    assert ids_as_of(server, scope, query, "2024-01-01T00:00:00Z") == [first]
    assert ids_as_of(server, scope, query, "2024-02-10") == [first]
    # Windows are half-open: the moment of succession belongs to the successor.
    assert ids_as_of(server, scope, query, "2024-02-29T23:59:59.999Z") == [first]
    assert ids_as_of(server, scope, query, "2024-03-01T00:00:00Z") == [second]
    assert ids_as_of(server, scope, query, "2024-05-01T12:00:00-07:00") == [second]
    assert ids_as_of(server, scope, query, "2024-06-01T07:30:00Z") == [third]
    assert ids_as_of(server, scope, query, "2025-01-01") == [third]
    assert ids_as_of(server, scope, query, None) == [third]
    (hit,) = search(server, scope, query, as_of="2024-04-01")
    # Superseded since, but at that moment it was what held true, and says until when.
    assert hit["status"] == "active" and hit["successor"] is None
    assert hit["valid_from"] == "2024-03-01T00:00:00.000Z"
    assert hit["valid_until"] == "2024-06-01T07:30:00.000Z"


def test_history_marks_what_was_superseded_by_then(server: Client, scope: str) -> None:
    first, second, third = port_timeline(server, scope)
    query = "dev server port"
    marked = {
        hit["id"]: (hit["status"], hit["successor"], hit["valid_until"])
        for hit in search(server, scope, query, as_of="2024-04-01", include_superseded=True)
    }
    assert marked == {
        first: ("superseded", second, "2024-03-01T00:00:00.000Z"),
        second: ("active", None, "2024-06-01T07:30:00.000Z"),
    }  # the third was not valid yet: history is what happened by then
    now = {hit["id"]: hit for hit in search(server, scope, query, include_superseded=True)}
    assert set(now) == {first, second, third}
    assert now[first]["status"] == now[second]["status"] == "superseded"
    assert (now[first]["successor"], now[second]["successor"]) == (second, third)
    assert now[third]["status"] == "active" and now[third]["valid_until"] is None
    # Never hidden: each superseded memory stays readable by id, with its closed window.
    old = get(server, scope, first)
    assert old["status"] == "superseded" and old["successor"] == second
    assert (old["valid_from"], old["valid_until"]) == (
        "2024-01-01T00:00:00.000Z",
        "2024-03-01T00:00:00.000Z",
    )


def test_context_reads_the_facts_of_each_moment(server: Client, scope: str) -> None:
    first, second, third = port_timeline(server, scope)
    assert context_ids(server, scope, "facts", "2023-06-01") == []
    assert context_ids(server, scope, "facts", "2024-02-01") == [first]
    assert context_ids(server, scope, "facts", "2024-03-15") == [second]
    assert context_ids(server, scope, "facts", "2024-07-01") == [third]
    assert context_ids(server, scope, "facts", None) == [third]


# -- timeline (b): a decision reversed, then restored ------------------------------------------


def test_a_decision_reversed_and_restored(server: Client, scope: str) -> None:
    original = remember(
        server, scope, "decision", "store sessions in postgres", valid_from="2024-01-01"
    )
    reversal = supersede(server, scope, original, "store sessions in redis", "2024-02-01")
    restored = supersede(server, scope, reversal, "store sessions in postgres", "2024-03-01")
    assert restored not in (original, reversal)  # the restoration is a memory of its own

    query = "store sessions"
    assert ids_as_of(server, scope, query, "2024-01-15") == [original]
    assert ids_as_of(server, scope, query, "2024-02-15") == [reversal]
    assert ids_as_of(server, scope, query, "2024-03-15") == [restored]
    assert ids_as_of(server, scope, query, None) == [restored]
    assert context_ids(server, scope, "decisions", "2024-02-15") == [reversal]
    assert context_ids(server, scope, "decisions", None) == [restored]

    history = {
        hit["id"]: (hit["status"], hit["successor"], hit["content"])
        for hit in search(server, scope, query, as_of="2024-03-15", include_superseded=True)
    }
    assert history == {
        original: ("superseded", reversal, "store sessions in postgres"),
        reversal: ("superseded", restored, "store sessions in redis"),
        restored: ("active", None, "store sessions in postgres"),
    }
    changes = server.result("memory.history", {"scope": scope, "id": reversal})["changes"]
    assert [(c["action"], c["status"], c["successor"]) for c in changes] == [
        ("remember", "active", None),
        ("supersede", "superseded", restored),
    ]


# -- belief and erasure --------------------------------------------------------------------


def test_an_invalidation_counts_from_when_it_was_recorded(server: Client, scope: str) -> None:
    wrong = remember(server, scope, "fact", "the cache lives in memcached", valid_from="2024-01-01")
    server.result("memory.invalidate", {"scope": scope, "id": wrong, "reason": "it never did"})
    assert ids_as_of(server, scope, "cache lives", "2024-06-01") == [wrong]  # believed then
    assert ids_as_of(server, scope, "cache lives", None) == []
    assert search(server, scope, "cache lives", include_superseded=True) == []


def test_forgotten_memories_stay_gone_at_every_moment(server: Client, scope: str) -> None:
    gone = remember(server, scope, "fact", "the api key is in vault", valid_from="2024-01-01")
    kept = supersede(server, scope, gone, "the api key is in the env file", "2024-02-01")
    server.result("memory.forget", {"scope": scope, "id": gone})
    for as_of in ("2024-01-15", "2024-03-01"):
        found = search(server, scope, "api key", as_of=as_of, include_superseded=True)
        assert [hit["id"] for hit in found] == ([] if as_of == "2024-01-15" else [kept])
    assert context_ids(server, scope, "facts", "2024-01-15") == []


def test_a_window_given_at_remember_bounds_what_search_and_context_serve(
    server: Client, scope: str
) -> None:
    freeze = remember(
        server,
        scope,
        "decision",
        "merge freeze for the release",
        valid_from="2024-05-01",
        valid_until="2024-05-08",
    )
    assert ids_as_of(server, scope, "merge freeze", "2024-05-03") == [freeze]
    assert ids_as_of(server, scope, "merge freeze", "2024-05-08") == []
    assert ids_as_of(server, scope, "merge freeze", None) == []  # over by now
    assert context_ids(server, scope, "decisions", None) == []
    assert context_ids(server, scope, "decisions", "2024-05-03") == [freeze]
    assert get(server, scope, freeze)["valid_until"] == "2024-05-08T00:00:00.000Z"


# -- bad input changes nothing -------------------------------------------------------------


@pytest.mark.parametrize("moment", ["yesterday", "2024-13-01T00:00:00Z", "2024-02-30"])
def test_a_malformed_as_of_is_refused(server: Client, scope: str, moment: str) -> None:
    for method, params in (
        ("memory.search", {"scope": scope, "query": "anything", "as_of": moment}),
        ("context.get", {"scope": scope, "as_of": moment}),
    ):
        assert_error(server.call(method, params), INVALID_PARAMS, path="$.params.as_of")


def list_contents(client: Client, scope: str) -> list[str]:
    items = client.result("memory.list", {"scope": scope})["items"]
    return [item["content"] for item in items]


def test_inverted_windows_are_refused_and_nothing_is_written(server: Client, scope: str) -> None:
    inverted = {"valid_from": "2024-05-08", "valid_until": "2024-05-01"}
    response = server.call(
        "memory.remember", {"scope": scope, "kind": "fact", "content": "a", **inverted}
    )
    assert_error(response, INVALID_PARAMS, path="$.params.valid_until")
    empty = {"valid_from": "2024-05-01", "valid_until": "2024-05-01"}
    items = [{"kind": "fact", "content": "b"}, {"kind": "fact", "content": "c", **empty}]
    response = server.call("memory.remember_batch", {"scope": scope, "items": items})
    assert_error(response, INVALID_PARAMS, path="$.params.items[1].valid_until")
    past_end = {"scope": scope, "kind": "fact", "content": "d", "valid_until": "2024-01-01"}
    response = server.call("memory.remember", past_end)  # without a start: opens now, after it
    assert_error(response, INVALID_PARAMS, path="$.params.valid_until")
    assert list_contents(server, scope) == []

    kept = remember(server, scope, "fact", "the port is 8080", valid_from="2024-01-01")
    before = get(server, scope, kept)
    edit = {"scope": scope, "id": kept, "content": "the port is 8080", "reason": "window"}
    response = server.call("memory.edit", {**edit, "valid_until": "2023-12-01"})
    assert_error(response, INVALID_PARAMS, path="$.params.valid_until")
    assert get(server, scope, kept) == before


def test_a_succession_outside_the_window_is_refused(server: Client, scope: str) -> None:
    kept = remember(server, scope, "fact", "the port is 8080", valid_from="2024-02-01")
    before = get(server, scope, kept)
    for moment in ("2024-01-01", "2024-02-01", "2999-01-01"):  # before or at its start; future
        params = {"scope": scope, "id": kept, "content": "the port is 9090", "valid_from": moment}
        response = server.call("memory.supersede", params)
        assert_error(response, INVALID_PARAMS, path="$.params.valid_from")
    assert get(server, scope, kept) == before
    assert list_contents(server, scope) == ["the port is 8080"]


def test_a_window_not_begun_is_not_served_nor_superseded_now(server: Client, scope: str) -> None:
    planned = remember(server, scope, "decision", "move ci to arm runners", valid_from="2999-01-01")
    assert ids_as_of(server, scope, "arm runners", None) == []
    assert ids_as_of(server, scope, "arm runners", "2999-06-01") == [planned]
    assert context_ids(server, scope, "decisions", None) == []
    before = get(server, scope, planned)
    params = {"scope": scope, "id": planned, "content": "move ci to x86 runners"}
    response = server.call("memory.supersede", params)  # now: before its window opens
    assert_error(response, INVALID_PARAMS, path="$.params.valid_from")
    assert get(server, scope, planned) == before


def test_an_edit_moves_a_window(server: Client, scope: str) -> None:
    memory_id = remember(server, scope, "fact", "the port is 8080", valid_from="2024-01-01")
    edit = {"scope": scope, "id": memory_id, "content": "the port is 8080", "reason": "ended"}
    result = server.result("memory.edit", {**edit, "valid_until": "2024-04-01"})
    assert result["changed"] is True and result["revision"] == 1
    again = server.result("memory.edit", {**edit, "valid_until": "2024-04-01"})
    assert again["changed"] is False
    assert ids_as_of(server, scope, "port", "2024-03-01") == [memory_id]
    assert ids_as_of(server, scope, "port", "2024-05-01") == []
    assert ids_as_of(server, scope, "port", None) == []
