"""Scopes: the `--scope` allow-list, the `--project` default and canonical absolute paths."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from client import Client, Spawn, assert_error


def remember(client: Client, content: str, **params: Any) -> dict[str, Any]:
    return client.result("memory.remember", {"kind": "fact", "content": content, **params})


def listed(client: Client, **params: Any) -> list[dict[str, Any]]:
    return client.result("memory.list", {"limit": 200, **params})["items"]


@pytest.fixture
def project(tmp_path: Path) -> tuple[Path, Path, str]:
    """A project directory, a symlink to it, and its canonical path."""
    real = tmp_path / "project"
    real.mkdir()
    link = tmp_path / "project-link"
    link.symlink_to(real, target_is_directory=True)
    return real, link, os.path.realpath(real)


def test_scope_outside_allow_list_is_refused_and_changes_nothing(spawn: Spawn) -> None:
    unrestricted = spawn()
    other_id = remember(unrestricted, "other scope: the password is hunter2", scope="other")["id"]
    restricted = spawn("--scope", "allowed")
    assert remember(restricted, "inside the allow-list", scope="allowed")["created"] is True
    refused: list[tuple[str, dict[str, Any], str]] = [
        ("memory.remember", {"scope": "other", "kind": "fact", "content": "x"}, "$.params.scope"),
        (
            "memory.remember",
            {"scope": "other", "kind": "note", "content": "y", "client_token": "t"},
            "$.params.scope",
        ),
        ("memory.get", {"scope": "other", "id": other_id}, "$.params.scope"),
        ("memory.list", {"scope": "other"}, "$.params.scope"),
        ("memory.forget", {"scope": "other", "id": other_id}, "$.params.scope"),
        ("memory.search", {"scope": "other", "query": "password"}, "$.params.scope"),
        (
            "memory.search",
            {"scopes": ["allowed", "other"], "query": "password"},
            "$.params.scopes[1]",
        ),
    ]
    for method, params, path in refused:
        response = restricted.call(method, params)
        data = assert_error(response, -32004, path=path)
        assert data["retryable"] is False
        assert "hunter2" not in response["error"]["message"]
    # An unrestricted process on the same file sees exactly what was there before.
    (item,) = listed(unrestricted, scope="other")
    assert item["id"] == other_id and item["status"] == "active"
    assert [i["content"] for i in listed(unrestricted, scope="allowed")] == [
        "inside the allow-list"
    ]


def test_allow_list_without_project_still_requires_a_scope(spawn: Spawn) -> None:
    server = spawn("--scope", "allowed")
    response = server.call("memory.remember", {"kind": "fact", "content": "where?"})
    assert_error(response, -32602, path="$.params.scope")


def test_allow_list_compares_canonical_paths(spawn: Spawn, project: tuple[Path, Path, str]) -> None:
    real, link, canonical = project
    server = spawn("--scope", str(link))
    assert remember(server, "via the real path", scope=str(real))["created"] is True
    assert remember(server, "via ./", scope=f"{real.parent}/./{real.name}")["created"] is True
    sibling = real.parent / "sibling"
    sibling.mkdir()
    response = server.call("memory.list", {"scope": f"{real}/../sibling"})
    assert_error(response, -32004)
    assert {item["scope"] for item in listed(server, scope=str(link))} == {canonical}


def test_project_is_the_default_scope_as_its_real_path(
    spawn: Spawn, project: tuple[Path, Path, str]
) -> None:
    real, link, canonical = project
    server = spawn("--project", str(link))
    init = server.result("initialize", {"protocolVersion": "1.0"})
    assert init["capabilities"]["scopes"]["default"] == canonical
    memory_id = remember(server, "no scope given")["id"]
    memory = server.result("memory.get", {"id": memory_id})["memory"]
    assert memory["scope"] == canonical
    assert server.result("memory.get", {"scope": str(real), "id": memory_id})["memory"]
    assert [item["id"] for item in listed(server)] == [memory_id]
    hits = server.result("memory.search", {"query": "scope given"})["results"]
    assert [hit["id"] for hit in hits] == [memory_id]
    # Another process without --project finds it under the canonical path only.
    other = spawn()
    assert [item["id"] for item in listed(other, scope=canonical)] == [memory_id]
    assert listed(other, scope="project") == []


def test_project_scope_is_always_allowed(spawn: Spawn, project: tuple[Path, Path, str]) -> None:
    _, link, canonical = project
    server = spawn("--project", str(link), "--scope", "extra")
    assert remember(server, "in the project")["created"] is True
    assert remember(server, "in the extra scope", scope="extra")["created"] is True
    assert_error(server.call("memory.list", {"scope": "third"}), -32004)
    assert [item["scope"] for item in listed(server, scope=canonical)] == [canonical]


def test_absolute_path_spellings_share_one_scope(
    spawn: Spawn, project: tuple[Path, Path, str]
) -> None:
    real, link, canonical = project
    spellings = [
        str(link),
        f"{real.parent}/./{real.name}",
        f"{real}/",
        f"{real.parent}//{real.name}",
        f"{real}/missing/..",
        canonical,
    ]
    server = spawn()
    first = remember(server, "one project, many spellings", scope=spellings[0])
    assert first["created"] is True
    for spelling in spellings:
        (item,) = listed(server, scope=spelling)
        assert item["id"] == first["id"] and item["scope"] == canonical, spelling
        replay = remember(server, "one project, many spellings", scope=spelling)
        assert replay == {"id": first["id"], "created": False}, spelling
    hits = server.result("memory.search", {"scopes": spellings, "query": "spellings"})["results"]
    assert [hit["id"] for hit in hits] == [first["id"]]


def test_relative_scopes_are_plain_names(spawn: Spawn) -> None:
    server = spawn()
    remember(server, "named scope", scope="my-project")
    assert listed(server, scope="./my-project") == []
    assert listed(server, scope="My-Project") == []
