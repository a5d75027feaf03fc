"""stdout belongs to the protocol: prints and raw writes to fd 1 inside the process go elsewhere."""

from __future__ import annotations

import json

from client import NOISY_SERVER, Spawn


def test_prints_and_fd1_writes_never_reach_the_protocol_stream(spawn: Spawn) -> None:
    server = spawn(wrapper=NOISY_SERVER)
    for _ in range(3):
        server.ping()
    memory_id = server.result(
        "memory.remember", {"scope": "s", "kind": "note", "content": "quiet please"}
    )["id"]
    listed = server.result("memory.list", {"scope": "s"})  # noisy on a worker thread
    assert [item["id"] for item in listed["items"]] == [memory_id]
    assert server.finish() == 0
    assert len(server.lines) == 5
    for line in server.lines:
        message = json.loads(line)
        assert message["jsonrpc"] == "2.0" and "result" in message, line
    stderr = server.stderr_text()
    for where in ("ping", "memory.list"):
        assert f"noise from print in {where}" in stderr
        assert f"raw noise from os.write(1) in {where}" in stderr
        assert f"noise from sys.stdout in {where}" in stderr
        assert f"noise from sys.__stdout__ in {where}" in stderr


def test_logs_are_json_lines_on_stderr(spawn: Spawn) -> None:
    server = spawn("--log-level", "debug")
    server.ping()
    server.result("memory.list", {"scope": "s"})
    assert server.finish() == 0
    logged = [json.loads(line) for line in server.stderr_text().splitlines() if line.strip()]
    assert logged, "debug logging wrote nothing"
    assert all({"ts", "level", "msg"} <= set(entry) for entry in logged)
