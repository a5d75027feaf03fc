"""Read your writes on one stream: a request sees every write sent before it on its scope.

The pairs are written to the pipe in one go, so the server has read many of them before the
first write commits; only the ordering rule can make every read see its write. Parallelism
across scopes is shown with `slow_server.py`: a request held in one scope does not hold up
another scope, and does hold up a later write of its own scope.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from client import SLOW_SERVER, Spawn

PAIRS = 1_000
SCOPES = [f"order-{n}" for n in range(8)]
WINDOW = 100  # pairs in flight at once: 200 requests, inside the default max_pending of 256

Check = Callable[[dict[str, Any]], bool]


def line(request_id: str, method: str, params: dict[str, Any]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    return json.dumps(message).encode() + b"\n"


def pair(i: int, scope: str, target: str) -> tuple[bytes, bytes, Check]:
    """The i-th write-then-read pair, and the check its read's result must pass."""
    marker = f"m{i}x"
    remember = {"scope": scope, "kind": "fact"}
    edit = {"scope": scope, "id": target, "content": f"edited {marker}", "reason": "pair"}
    pairs: list[tuple[tuple[str, dict[str, Any]], tuple[str, dict[str, Any]], Check]] = [
        (
            ("memory.remember", {**remember, "content": f"list {marker}"}),
            ("memory.list", {"scope": scope, "limit": 200}),
            lambda r: f"list {marker}" in [m["content"] for m in r["items"]],
        ),
        (
            ("memory.remember", {**remember, "content": f"find {marker}"}),
            ("memory.search", {"scope": scope, "query": marker, "limit": 5}),
            lambda r: f"find {marker}" in [hit["content"] for hit in r["results"]],
        ),
        (
            ("memory.edit", edit),
            ("memory.get", {"scope": scope, "id": target}),
            lambda r: r["memory"]["content"] == f"edited {marker}",
        ),
        (
            ("checkpoint.save", {"scope": scope, "task": "pairs", "summary": marker}),
            ("checkpoint.get", {"scope": scope, "task": "pairs"}),
            lambda r: r["checkpoint"]["summary"] == marker,
        ),
        (
            ("evidence.put", evidence(scope, marker)),
            ("evidence.get", {"scope": scope, "evidence_id": marker}),
            lambda r: r["evidence"]["claim"] == f"claim {marker}",
        ),
    ]
    write, read, check = pairs[i % len(pairs)]
    return line(f"w{i}", *write), line(f"r{i}", *read), check


def evidence(scope: str, marker: str) -> dict[str, Any]:
    return {
        "scope": scope,
        "evidence_id": marker,
        "claim": f"claim {marker}",
        "outcome": "supported",
        "observation": {"n": 1},
        "provenance": {"producer": "test", "check_type": "pair"},
        "observed_at": "2026-01-01T00:00:00Z",
    }


def test_1000_pipelined_write_then_read_pairs_all_see_their_write(spawn: Spawn) -> None:
    server = spawn()
    targets = {
        scope: server.result("memory.remember", {"scope": scope, "kind": "fact", "content": "v0"})[
            "id"
        ]
        for scope in SCOPES
    }
    misses: list[int] = []
    for start in range(0, PAIRS, WINDOW):
        checks: dict[int, Check] = {}
        burst = bytearray()
        for i in range(start, start + WINDOW):
            scope = SCOPES[i % len(SCOPES)]
            write, read, checks[i] = pair(i, scope, targets[scope])
            burst += write + read
        server.send_raw(bytes(burst))
        for i, check in checks.items():
            assert "result" in server.wait_for(f"w{i}"), f"write {i} failed"
            response = server.wait_for(f"r{i}")
            if "result" not in response or not check(response["result"]):
                misses.append(i)
    assert misses == []


def test_a_held_request_holds_up_its_own_scope_only(spawn: Spawn) -> None:
    server = spawn("--workers", "2", wrapper=SLOW_SERVER)
    server.request("memory.search", {"scope": "a", "query": "block a"}, id="held")
    server.wait_started("a")
    remember_a = {"scope": "a", "kind": "fact", "content": "after the held read"}
    server.send_raw(
        line("write-a", "memory.remember", remember_a)
        + line("read-a", "memory.list", {"scope": "a"})
        + line("write-b", "memory.remember", {"scope": "b", "kind": "fact", "content": "free"})
        + line("read-b", "memory.list", {"scope": "b"})
    )
    # Scope b runs on the free worker while scope a waits for the held read.
    assert "result" in server.wait_for("write-b")
    (item,) = server.wait_for("read-b")["result"]["items"]
    assert item["content"] == "free"
    server.ping()
    assert server.responses("write-a") == [] and server.responses("read-a") == []
    server.release("a")
    assert "result" in server.wait_for("held")
    assert server.wait_for("write-a")["result"]["created"] is True
    (item,) = server.wait_for("read-a")["result"]["items"]
    assert item["content"] == "after the held read"
    assert server.finish() == 0


def test_reads_of_one_scope_run_side_by_side(spawn: Spawn) -> None:
    """Two reads of a scope with no write between them need not wait for each other."""
    server = spawn("--workers", "2", wrapper=SLOW_SERVER)
    server.request("memory.search", {"scope": "a", "query": "block a"}, id="first")
    server.wait_started("a")
    server.request("memory.search", {"scope": "a", "query": "block b"}, id="second")
    server.wait_started("b")  # started while the first is still held
    server.release("all")
    assert "result" in server.wait_for("first") and "result" in server.wait_for("second")
    assert server.finish() == 0


def test_a_write_waits_for_the_reads_sent_before_it(spawn: Spawn) -> None:
    """A read sent before a write never sees it, even when the write could have run first."""
    server = spawn("--workers", "2", wrapper=SLOW_SERVER)
    server.request("memory.search", {"scope": "a", "query": "block a"}, id="held")
    server.wait_started("a")
    server.request("memory.remember", {"scope": "a", "kind": "fact", "content": "later"}, id="w")
    server.ping()
    assert server.responses("w") == []  # a worker is free, but the write waits its turn
    server.release("a")
    assert server.wait_for("held")["result"]["results"] == []
    assert server.wait_for("w")["result"]["created"] is True
    assert server.finish() == 0
