"""Cancellation, slow requests, overload, duplicate ids, pipelining and two writers on one file.

Timing-sensitive cases run against `slow_server.py`, whose handlers block until the test
releases them (or the request is cancelled), so every interleaving here is forced, not hoped for.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any

import pytest
from client import SLOW_SERVER, Client, Spawn, assert_error
from paging import every_item

CANCELLED = -32800


def block(server: Client, name: str, request_id: Any = None) -> Any:
    """Start a search that blocks in a worker until released or cancelled; its id."""
    request_id = server.request(
        "memory.search", {"scope": "s", "query": f"block {name}"}, id=request_id
    )
    server.wait_started(name)
    return request_id


def contents(server: Client, scope: str = "s") -> list[str]:
    return [item["content"] for item in server.result("memory.list", {"scope": scope})["items"]]


@pytest.fixture
def slow(spawn: Spawn) -> Client:
    return spawn("--workers", "2", wrapper=SLOW_SERVER)


# -- cancellation ------------------------------------------------------------------------------


def test_cancel_request_cancels_a_running_request(slow: Client) -> None:
    block(slow, "a", request_id="slow-a")
    assert slow.call("$/cancelRequest", {"id": "slow-a"})["result"] == {"cancelled": True}
    data = assert_error(slow.wait_for("slow-a"), CANCELLED, id="slow-a")
    assert data["retryable"] is False
    assert slow.finish() == 0
    assert len(slow.responses("slow-a")) == 1


def test_cancelled_notification_cancels_a_running_request(slow: Client) -> None:
    block(slow, "b", request_id=41)
    slow.notify("notifications/cancelled", {"requestId": 41, "reason": "user pressed stop"})
    assert_error(slow.wait_for(41), CANCELLED, id=41)
    assert slow.finish() == 0
    assert slow.line_count() == 1  # the notification itself got no response


def test_cancel_matches_id_type(slow: Client) -> None:
    block(slow, "c", request_id=7)
    assert slow.call("$/cancelRequest", {"id": "7"})["result"] == {"cancelled": False}
    assert slow.responses(7) == []
    assert slow.call("$/cancelRequest", {"id": 7})["result"] == {"cancelled": True}
    assert_error(slow.wait_for(7), CANCELLED)


def test_cancel_of_unknown_or_finished_request_is_a_no_op(slow: Client) -> None:
    assert slow.call("$/cancelRequest", {"id": "never-sent"})["result"] == {"cancelled": False}
    done = slow.call(
        "memory.remember", {"scope": "s", "kind": "fact", "content": "done"}, id="done"
    )
    assert done["result"]["created"] is True
    assert slow.call("$/cancelRequest", {"id": "done"})["result"] == {"cancelled": False}
    assert slow.finish() == 0
    assert len(slow.responses("done")) == 1


def test_cancelling_a_queued_request_answers_it_once(spawn: Spawn) -> None:
    server = spawn("--workers", "1", wrapper=SLOW_SERVER)
    block(server, "a", request_id="blocker")
    server.request("memory.list", {"scope": "s"}, id="queued")
    assert server.call("$/cancelRequest", {"id": "queued"})["result"] == {"cancelled": True}
    assert_error(server.wait_for("queued"), CANCELLED, id="queued")
    server.release("a")
    assert server.wait_for("blocker")["result"]["results"] == []
    assert server.finish() == 0
    assert len(server.responses("queued")) == 1
    assert len(server.responses("blocker")) == 1


def test_cancelled_queued_write_leaves_nothing(spawn: Spawn) -> None:
    server = spawn("--workers", "1", wrapper=SLOW_SERVER)
    block(server, "a")
    params = {"scope": "s", "kind": "fact", "content": "never stored", "client_token": "t1"}
    server.request("memory.remember", params, id="write")
    server.call("$/cancelRequest", {"id": "write"})
    assert_error(server.wait_for("write"), CANCELLED, id="write")
    server.release("a")
    assert contents(server) == []
    assert server.finish() == 0
    assert len(server.responses("write")) == 1
    # The same client_token is free: nothing with it was ever committed.
    fresh = spawn()
    assert fresh.result("memory.remember", params)["created"] is True


def test_cancelled_running_write_is_rolled_back(spawn: Spawn) -> None:
    """The row is inserted inside the transaction, then the cancel interrupts SQLite."""
    server = spawn("--workers", "1", wrapper=SLOW_SERVER)
    server.request(
        "memory.remember",
        {"scope": "s", "kind": "fact", "content": "block-insert w1 half written"},
        id="w",
    )
    server.wait_started("w1")
    assert server.call("$/cancelRequest", {"id": "w"})["result"] == {"cancelled": True}
    assert_error(server.wait_for("w"), CANCELLED, id="w")
    assert contents(server) == []
    assert server.result("memory.search", {"scope": "s", "query": "half written"})["results"] == []
    assert server.finish() == 0
    assert contents(spawn()) == []


def test_write_cancelled_before_commit_is_not_committed(spawn: Spawn) -> None:
    """A cancel that arrives while nothing checks it is still honoured at COMMIT: -32800 means
    nothing was written, never "written, but reported as cancelled"."""
    server = spawn("--workers", "1", wrapper=SLOW_SERVER)
    server.request(
        "memory.remember",
        {"scope": "s", "kind": "fact", "content": "block-insert-quiet w2 too late"},
        id="w",
    )
    server.wait_started("w2")
    assert server.call("$/cancelRequest", {"id": "w"})["result"] == {"cancelled": True}
    server.release("w2")
    assert_error(server.wait_for("w"), CANCELLED, id="w")
    assert contents(server) == []
    assert server.finish() == 0
    assert contents(spawn()) == []


# -- slow requests, overload and duplicate ids --------------------------------------------------


def test_slow_requests_do_not_delay_ping(slow: Client) -> None:
    block(slow, "a", request_id="a")
    block(slow, "b", request_id="b")  # both workers are now busy
    for _ in range(5):
        slow.ping(timeout=2)
    assert slow.call("server.info", timeout=2)["result"]["name"] == "memproc"
    assert slow.call("initialize", {"protocolVersion": "1.0"}, timeout=2)["result"]
    assert slow.responses("a") == [] and slow.responses("b") == []
    slow.release("a")
    slow.release("b")
    assert "result" in slow.wait_for("a") and "result" in slow.wait_for("b")


def test_overload_beyond_max_pending(spawn: Spawn) -> None:
    server = spawn("--workers", "1", "--max-pending", "2", wrapper=SLOW_SERVER)
    block(server, "a", request_id="running")  # taken by the worker: the queue is empty
    server.request("memory.list", {"scope": "s"}, id="q1")
    server.request("memory.list", {"scope": "s"}, id="q2")
    data = assert_error(server.call("memory.list", {"scope": "s"}, id="q3"), -32011, id="q3")
    assert data["retryable"] is True
    server.ping()  # inline methods are never refused
    assert server.responses("q1") == [] and server.responses("q2") == []
    server.release("a")
    for request_id in ("running", "q1", "q2"):
        assert "result" in server.wait_for(request_id), request_id
    assert "result" in server.call("memory.list", {"scope": "s"}, id="q4")
    assert server.finish() == 0
    assert all(len(server.responses(i)) == 1 for i in ("running", "q1", "q2", "q3", "q4"))


def test_duplicate_in_flight_id_is_refused(slow: Client) -> None:
    block(slow, "a", request_id="dup")
    assert_error(slow.call("memory.list", {"scope": "s"}, id="dup"), -32600, id="dup")
    slow.release("a")
    assert slow.finish() == 0
    first, second = slow.responses("dup")
    assert first["error"]["code"] == -32600
    assert "result" in second


def test_duplicate_in_flight_id_is_refused_for_inline_methods(slow: Client) -> None:
    block(slow, "a", request_id="dup")
    assert_error(slow.call("ping", id="dup"), -32600, id="dup")
    slow.release("a")
    assert slow.finish() == 0
    assert [("result" in r) for r in slow.responses("dup")] == [False, True]


def test_id_can_be_reused_once_answered(spawn: Spawn) -> None:
    server = spawn()
    for _ in range(3):
        assert "result" in server.call("memory.list", {"scope": "s"}, id="again")


# -- pipelining and two processes ----------------------------------------------------------------


def test_pipelined_requests_are_each_answered_once(spawn: Spawn) -> None:
    server = spawn()
    requests: list[dict[str, Any]] = []
    for i in range(200):
        method, params = [
            ("memory.remember", {"scope": "s", "kind": "fact", "content": f"pipelined {i}"}),
            ("memory.search", {"scope": "s", "query": "pipelined"}),
            ("memory.list", {"scope": "s", "limit": 10}),
            ("ping", {}),
        ][i % 4]
        request_id = i if i % 2 else f"r{i}"  # integer and string ids, mixed
        requests.append({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
    server.send_raw(b"".join(json.dumps(request).encode() + b"\n" for request in requests))
    assert server.finish() == 0  # end of input: every response is in
    assert server.line_count() == 200
    created = []
    for request in requests:
        (response,) = server.responses(request["id"])
        assert "result" in response, response
        if request["method"] == "memory.remember":
            assert response["result"]["created"] is True
            created.append(response["result"]["id"])
    assert len(set(created)) == 50


WRITES_PER_PROCESS = 300


def _write_all(server: Client, tag: str) -> tuple[dict[str, str], int]:
    """Pipeline every write, then retry only those refused as busy; (token -> id, busy count).

    Retries reuse the client_token, so a write that was in fact applied cannot be doubled.
    """
    pending = {f"{tag}-{i}": f"memory {i} written by process {tag}" for i in range(300)}
    ids: dict[str, str] = {}
    busy = 0
    for attempt in range(20):
        for token, content in pending.items():
            params = {"scope": "shared", "kind": "fact", "content": content, "client_token": token}
            server.request("memory.remember", params, id=f"{token}/{attempt}")
        retry = {}
        for token, content in pending.items():
            response = server.wait_for(f"{token}/{attempt}", timeout=60)
            if "error" in response:
                data = assert_error(response, -32000)
                assert data["retryable"] is True
                retry[token] = content
            else:
                ids[token] = response["result"]["id"]
        busy += len(retry)
        if not retry:
            return ids, busy
        pending = retry
    raise AssertionError(f"process {tag} was still busy after 20 rounds")


def _list_ids(server: Client, scope: str) -> list[str]:
    return [item["id"] for item in every_item(server, "memory.list", {"scope": scope})]


def test_two_processes_writing_one_file_lose_nothing(
    spawn: Spawn, record_property: Callable[[str, object], None]
) -> None:
    # Both open (and migrate) the fresh file at once; the queue must hold a whole pipeline.
    first, second = spawn("--max-pending", "1000"), spawn("--max-pending", "1000")
    outcome: dict[str, Any] = {}

    def run(server: Client, tag: str) -> None:
        try:
            outcome[tag] = _write_all(server, tag)
        except BaseException as exc:
            outcome[tag] = exc

    thread = threading.Thread(target=run, args=(second, "B"))
    thread.start()
    run(first, "A")
    thread.join(120)
    assert not thread.is_alive()
    for tag in ("A", "B"):
        if isinstance(outcome[tag], BaseException):
            raise outcome[tag]
    (ids_a, busy_a), (ids_b, busy_b) = outcome["A"], outcome["B"]
    record_property("storage_busy_retries", busy_a + busy_b)
    assert len(ids_a) == len(ids_b) == WRITES_PER_PROCESS
    all_ids = set(ids_a.values()) | set(ids_b.values())
    assert len(all_ids) == 2 * WRITES_PER_PROCESS
    for server in (first, second):
        listed = _list_ids(server, "shared")
        assert len(listed) == len(set(listed)) == 2 * WRITES_PER_PROCESS
        assert set(listed) == all_ids
