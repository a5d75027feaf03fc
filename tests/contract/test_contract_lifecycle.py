"""End of input and SIGTERM: in-flight work is finished and answered, then the process exits 0."""

from __future__ import annotations

from client import SLOW_SERVER, Client, ServerError, Spawn, assert_error

# An idle exit takes well under a second (benchmarks/sigterm_storm.py reports the times); the
# defect these tests guard against was a hang, which no bound ends. A bound this loose tells
# the two apart on a loaded machine without timing anything.
HANG_S = 30.0


def remember_params(content: str) -> dict[str, str]:
    return {"scope": "s", "kind": "fact", "content": content}


def stored(client: Client) -> list[str]:
    items = client.result("memory.list", {"scope": "s", "limit": 200})["items"]
    return sorted(item["content"] for item in items)


def test_eof_answers_everything_in_flight_then_exits_0(spawn: Spawn) -> None:
    server = spawn()
    server.ping()
    ids = [server.request("memory.remember", remember_params(f"at eof {i}")) for i in range(50)]
    server.close_stdin()
    assert server.wait_exit() == 0
    for request_id in ids:
        (response,) = server.responses(request_id)
        assert response["result"]["created"] is True
    assert len(stored(spawn())) == 50


def test_eof_waits_for_a_blocked_request(spawn: Spawn) -> None:
    server = spawn("--workers", "1", wrapper=SLOW_SERVER)
    server.request("memory.search", {"scope": "s", "query": "block a"}, id="blocked")
    server.wait_started("a")
    server.request("memory.remember", remember_params("queued at eof"), id="queued")
    server.close_stdin()
    # Still serving: the blocked request has not been answered and nothing was cut short.
    assert server.proc.poll() is None
    assert server.responses("blocked") == []
    server.release("a")
    assert server.wait_exit() == 0
    assert "result" in server.wait_for("blocked")
    assert server.wait_for("queued")["result"]["created"] is True
    assert stored(spawn()) == ["queued at eof"]


def test_idle_process_exits_0_at_eof(spawn: Spawn) -> None:
    server = spawn()
    server.ping()
    server.close_stdin()
    assert server.wait_exit(timeout=HANG_S) == 0
    assert "requests still running at exit" not in server.stderr_text()


def test_sigterm_finishes_in_flight_work_then_exits_0(spawn: Spawn) -> None:
    server = spawn("--workers", "1", wrapper=SLOW_SERVER)
    server.request("memory.search", {"scope": "s", "query": "block a"}, id="blocked")
    server.wait_started("a")
    server.request("memory.remember", remember_params("queued at sigterm"), id="queued")
    server.ping()  # the reader has queued the write before the signal arrives
    server.terminate()
    server.wait_stderr("signal received")
    assert server.responses("blocked") == []
    server.release("a")
    assert server.wait_exit() == 0
    assert "result" in server.wait_for("blocked")
    assert server.wait_for("queued")["result"]["created"] is True
    assert stored(spawn()) == ["queued at sigterm"]


def test_sigterm_deadline_cancels_what_is_still_running(spawn: Spawn) -> None:
    server = spawn(
        "--workers", "1", wrapper=SLOW_SERVER, env={"MEMPROC_SHUTDOWN_DEADLINE_S": "0.3"}
    )
    server.request("memory.search", {"scope": "s", "query": "block never"}, id="blocked")
    server.wait_started("never")
    server.request("memory.remember", remember_params("never stored"), id="queued")
    server.ping()
    server.terminate()
    assert server.wait_exit(timeout=5) == 0
    assert_error(server.wait_for("blocked"), -32800)
    assert_error(server.wait_for("queued"), -32800)
    assert len(server.responses("blocked")) == len(server.responses("queued")) == 1
    assert stored(spawn()) == []


def test_sigterm_when_idle_exits_0(spawn: Spawn) -> None:
    server = spawn()
    server.ping()
    server.terminate()
    assert server.wait_exit(timeout=HANG_S) == 0
    assert "requests still running at exit" not in server.stderr_text()


def test_pending_calls_fail_at_once_when_the_child_dies(spawn: Spawn) -> None:
    """The client helper itself: a dead child fails the wait now, with its stderr attached."""
    server = spawn(wrapper=SLOW_SERVER)
    server.request("memory.search", {"scope": "s", "query": "block a"}, id="blocked")
    server.wait_started("a")
    server.kill()
    try:
        server.wait_for("blocked", timeout=HANG_S)
    except ServerError as exc:
        assert "server exited" in str(exc)  # not "timed out": it failed when the child died
        assert "slow_server: control directory" in str(exc)  # the child's stderr
    else:
        raise AssertionError("waiting on a dead server did not fail")
    assert server.wait_exit() != 0
