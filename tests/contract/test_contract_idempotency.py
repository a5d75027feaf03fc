"""Idempotent remember: replayed client tokens and duplicate content return the first id."""

from __future__ import annotations

from typing import Any

import pytest
from client import Client, Spawn


def remember(client: Client, content: str, **params: Any) -> dict[str, Any]:
    defaults = {"scope": "s", "kind": "fact"}
    return client.result("memory.remember", {**defaults, "content": content, **params})


def contents(client: Client, scope: str = "s") -> list[str]:
    items = client.result("memory.list", {"scope": scope, "limit": 200})["items"]
    return [item["content"] for item in items]


@pytest.fixture
def server(spawn: Spawn) -> Client:
    return spawn()


def test_same_client_token_returns_the_first_id(server: Client) -> None:
    first = remember(server, "the first write", client_token="tok-1")
    assert first["created"] is True
    assert remember(server, "the first write", client_token="tok-1") == {
        "id": first["id"],
        "created": False,
    }
    changed = remember(server, "a retried write with edits", client_token="tok-1", kind="note")
    assert changed == {"id": first["id"], "created": False}
    assert contents(server) == ["the first write"]


def test_client_tokens_are_per_scope(server: Client) -> None:
    first = remember(server, "scope one", client_token="shared-token")
    second = remember(server, "scope two", client_token="shared-token", scope="t")
    assert second["created"] is True and second["id"] != first["id"]


def test_duplicate_content_in_same_scope_and_kind_returns_the_first_id(server: Client) -> None:
    first = remember(server, "exactly this text")
    assert first["created"] is True
    assert remember(server, "exactly this text") == {"id": first["id"], "created": False}
    assert remember(server, "exactly this text", tags=["other"], importance=0.9) == {
        "id": first["id"],
        "created": False,
    }
    assert contents(server) == ["exactly this text"]


def test_other_kind_or_scope_or_text_creates_a_new_memory(server: Client) -> None:
    first = remember(server, "exactly this text")
    variants = [
        remember(server, "exactly this text", kind="decision"),
        remember(server, "exactly this text", scope="t"),
        remember(server, "exactly this text "),
        remember(server, "Exactly this text"),
    ]
    ids = {first["id"], *(variant["id"] for variant in variants)}
    assert all(variant["created"] is True for variant in variants)
    assert len(ids) == 5


def test_after_forget_the_same_content_is_new(server: Client) -> None:
    first = remember(server, "remember me again")
    server.result("memory.forget", {"scope": "s", "id": first["id"]})
    again = remember(server, "remember me again")
    assert again["created"] is True and again["id"] != first["id"]
    assert server.result("memory.get", {"scope": "s", "id": again["id"]})["memory"]
    assert contents(server) == ["remember me again"]


def test_pipelined_replays_create_exactly_one(server: Client) -> None:
    params = {"scope": "s", "kind": "fact", "content": "raced", "client_token": "race"}
    ids = [server.request("memory.remember", params) for _ in range(30)]
    results = [server.wait_for(request_id)["result"] for request_id in ids]
    assert sum(result["created"] for result in results) == 1
    assert len({result["id"] for result in results}) == 1
    assert contents(server) == ["raced"]


def test_replay_from_another_process(spawn: Spawn) -> None:
    first = remember(spawn(), "written by one process", client_token="cross")
    replay = remember(spawn(), "written by one process", client_token="cross")
    assert replay == {"id": first["id"], "created": False}
