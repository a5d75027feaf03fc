"""Malformed input and line framing: every nonblank line gets exactly one response.

The table of malformed lines lives in `cases/malformed.jsonl`: one case per line, with the raw
request (`line`, or `line_b64` for bytes that are not UTF-8), the expected error `code`, the
`id` the response must carry and, for invalid params, the expected `data.path`. A case may
carry `nest` to build a deeply nested value in place of `@NEST@` without storing it.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from client import Client, Spawn, assert_error

CASES_FILE = Path(__file__).resolve().parent / "cases" / "malformed.jsonl"
MAX_LINE = 2048


def load_cases() -> list[dict[str, Any]]:
    with CASES_FILE.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


CASES = load_cases()


def case_bytes(case: dict[str, Any]) -> bytes:
    if "line_b64" in case:
        return base64.b64decode(case["line_b64"])
    line: str = case["line"]
    nest = case.get("nest")
    if nest is not None:
        depth = nest["depth"]
        value = nest["open"] * depth + nest.get("inner", "") + nest["close"] * depth
        line = line.replace("@NEST@", value)
    return line.encode("utf-8")


def padded_ping(request_id: str, size: int) -> bytes:
    """A valid ping request of exactly `size` bytes (whitespace before the closing brace)."""
    head = f'{{"jsonrpc":"2.0","id":"{request_id}","method":"ping"'.encode()
    return head + b" " * (size - len(head) - 1) + b"}"


@pytest.fixture(scope="module")
def shared(module_spawn: Spawn) -> Client:
    """One worker, so a worker request queued after a case is answered after it."""
    return module_spawn("--workers", "1")


def test_case_table_is_sound() -> None:
    assert len(CASES) >= 25
    names = [case["name"] for case in CASES]
    assert len(names) == len(set(names))
    ids = [json.dumps(case["id"]) for case in CASES if case["id"] is not None]
    assert len(ids) == len(set(ids))
    assert {case["code"] for case in CASES} >= {-32700, -32600, -32601, -32602}


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_malformed_line_gets_exactly_one_error(shared: Client, case: dict[str, Any]) -> None:
    before = shared.line_count()
    shared.send_raw(case_bytes(case) + b"\n")
    expected_id = case["id"]
    response = shared.next_unsolicited() if expected_id is None else shared.wait_for(expected_id)
    assert_error(response, case["code"], id=case["id"], path=case.get("path"))
    # A second response to the case would come before these: the reader answers lines in order
    # and the single worker takes requests in order.
    shared.ping()
    assert "result" in shared.call("memory.list", {"scope": "barrier"})
    assert shared.line_count() - before == 3
    assert shared.unsolicited() == []


def test_whole_table_pipelined_gets_one_response_per_line(spawn: Spawn) -> None:
    server = spawn()
    server.send_raw(b"".join(case_bytes(case) + b"\n" for case in CASES))
    assert server.finish() == 0
    expected_null = Counter(case["code"] for case in CASES if case["id"] is None)
    assert Counter(r["error"]["code"] for r in server.unsolicited()) == expected_null
    for case in CASES:
        if case["id"] is not None:
            (response,) = server.responses(case["id"])
            assert_error(response, case["code"], path=case.get("path"))
    assert server.line_count() == len(CASES)


def test_blank_and_whitespace_lines_get_no_response(spawn: Spawn) -> None:
    server = spawn()
    server.send_raw(b"\n\n   \n\t\t\n\r\n \r\n\x0c\n")
    server.ping()
    assert server.line_count() == 1


def test_crlf_line_endings_are_accepted(spawn: Spawn) -> None:
    server = spawn()
    server.send_raw(
        b'{"jsonrpc":"2.0","id":"a","method":"ping"}\r\n'
        b'{"jsonrpc":"2.0","id":"b","method":"memory.remember",'
        b'"params":{"scope":"s","kind":"fact","content":"crlf"}}\r\n'
        b'{"jsonrpc":"2.0","id":"c","method":"ping"}\n'
    )
    assert server.wait_for("a")["result"] == {}
    memory_id = server.wait_for("b")["result"]["id"]
    assert server.wait_for("c")["result"] == {}
    memory = server.result("memory.get", {"scope": "s", "id": memory_id})["memory"]
    assert memory["content"] == "crlf"


def test_notifications_get_no_response(spawn: Spawn) -> None:
    server = spawn("--workers", "1")
    before = server.line_count()
    server.notify("ping")
    server.notify("memory.remember", {"scope": "s", "kind": "fact", "content": "from a note"})
    server.notify("memory.teleport", {})
    server.notify("memory.list", {"scope": "s", "limit": 0})
    server.notify("notifications/cancelled", {"requestId": "nothing-in-flight"})
    listed = server.result("memory.list", {"scope": "s"})
    assert [item["content"] for item in listed["items"]] == ["from a note"]
    assert server.line_count() - before == 1


def test_last_line_without_newline_is_served_at_eof(spawn: Spawn) -> None:
    server = spawn()
    server.send_raw(b'{"jsonrpc":"2.0","id":"last","method":"ping"}')
    assert server.finish() == 0
    assert server.responses("last") == [{"jsonrpc": "2.0", "id": "last", "result": {}}]


# -- the line-length cap ----------------------------------------------------------------------


@pytest.fixture
def capped(spawn: Spawn) -> Client:
    return spawn("--max-line-bytes", str(MAX_LINE))


def test_line_over_cap_is_refused_and_next_line_served(capped: Client) -> None:
    content = "x" * (MAX_LINE + 100)
    request = {
        "jsonrpc": "2.0",
        "id": "big",
        "method": "memory.remember",
        "params": {"scope": "s", "kind": "fact", "content": content},
    }
    capped.send_raw(
        json.dumps(request).encode() + b'\n{"jsonrpc":"2.0","id":"next","method":"ping"}\n'
    )
    data = assert_error(capped.next_unsolicited(), -32010, id=None)
    assert data["max_bytes"] == MAX_LINE
    assert capped.wait_for("next")["result"] == {}
    assert capped.responses("big") == []
    assert capped.result("memory.list", {"scope": "s"})["items"] == []


def test_huge_line_spanning_many_reads_is_skipped(capped: Client) -> None:
    huge = b'{"jsonrpc":"2.0","id":"huge","method":"ping","params":{"x":"' + b"y" * (1 << 20)
    capped.send_raw(huge + b'"}}\n{"jsonrpc":"2.0","id":"after","method":"ping"}\n')
    assert_error(capped.next_unsolicited(), -32010, id=None)
    assert capped.wait_for("after")["result"] == {}
    capped.ping()
    assert capped.responses("huge") == [] and capped.unsolicited() == []


def test_line_exactly_at_cap_is_served(capped: Client) -> None:
    capped.send_raw(padded_ping("fits", MAX_LINE) + b"\n" + padded_ping("crlf", MAX_LINE) + b"\r\n")
    assert capped.wait_for("fits")["result"] == {}
    assert capped.wait_for("crlf")["result"] == {}
    capped.send_raw(padded_ping("over", MAX_LINE + 1) + b"\n")
    assert_error(capped.next_unsolicited(), -32010, id=None)
    capped.ping()
    assert capped.responses("over") == []
