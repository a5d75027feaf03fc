"""The process always exits once it should, with status 0: past the shutdown deadline, work that
ignores its cancellation is answered -32800 and left behind; a SIGTERM after end of input still
bounds the drain; a stdout nobody reads any more (the harness died) ends the process by itself;
and neither a model being loaded nor one being run makes the exit crash.

The waits below are generous ceilings, far above the deadline, not latency targets: without
these guarantees the process would run until the blocked handler's 30 s safety release.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from client import SLOW_SERVER, Client, Spawn, assert_error, clean_env, memproc_argv

DEADLINE = {"MEMPROC_SHUTDOWN_DEADLINE_S": "0.5"}
EXIT_CEILING_S = 10.0  # slow_server releases a blocked handler after 30 s on its own


LONG_NOTE = " ".join(f"Sentence {i} of a long note about the deploy pipeline." for i in range(30))


def with_minilm(tmp_path: Path, minilm_dir: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir(exist_ok=True)
    if not (models / minilm_dir.name).exists():
        (models / minilm_dir.name).symlink_to(minilm_dir, target_is_directory=True)
    return models


def stubborn_write(server: Client, name: str) -> str:
    """A write that holds the write lock and never looks at its cancellation token."""
    params = {"scope": "s", "kind": "note", "content": f"block-insert-quiet {name} never stored"}
    request_id = server.request("memory.remember", params)
    server.wait_started(name)
    return request_id


def test_sigterm_answers_and_leaves_work_that_ignores_cancellation(spawn: Spawn) -> None:
    server = spawn("--workers", "2", wrapper=SLOW_SERVER, env=DEADLINE)
    stuck = stubborn_write(server, "w")
    waiting = server.request("memory.remember", {"scope": "s", "kind": "note", "content": "x"})
    server.ping()  # the second write is in a worker, waiting for the write lock
    server.terminate()
    assert server.wait_exit(EXIT_CEILING_S) == 0
    assert_error(server.wait_for(stuck), -32800)
    assert_error(server.wait_for(waiting), -32800)
    assert spawn().result("memory.list", {"scope": "s"})["items"] == []


def test_sigterm_after_end_of_input_still_bounds_the_drain(spawn: Spawn) -> None:
    server = spawn("--workers", "1", wrapper=SLOW_SERVER, env=DEADLINE)
    blocked = server.request("memory.search", {"scope": "s", "query": "block a"})
    server.wait_started("a")
    server.close_stdin()
    server.wait_stderr("input closed")  # draining, with no deadline of its own
    server.terminate()
    assert server.wait_exit(EXIT_CEILING_S) == 0
    assert_error(server.wait_for(blocked), -32800)


def test_sigterm_while_the_model_embeds_a_batch_exits_0(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    """The model run ignores cancellation: the batch is answered -32800 (not applied) and the
    process ends with the model still running, without crashing (onnxruntime aborts the
    process if the interpreter is torn down under it)."""
    server = spawn("--models-dir", str(with_minilm(tmp_path, minilm_dir)), env=DEADLINE)
    assert server.wait_component("embedder", 60)["state"] == "ready"
    items = [{"kind": "note", "content": f"{i}: {LONG_NOTE}"} for i in range(300)]
    batch = server.request("memory.remember_batch", {"scope": "s", "items": items})
    server.ping()
    server.terminate()
    assert server.wait_exit(EXIT_CEILING_S) == 0
    answer = server.wait_for(batch)
    stored = spawn().result("memory.list", {"scope": "s"})["items"]
    assert len(stored) == (len(items) if "result" in answer else 0)


def test_sigterm_or_eof_while_the_model_loads_exits_0(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    """Several servers, each stopped at a different point of its model load (the sleeps only
    spread the signals over the load; they make nothing pass). Before the load was waited
    for, about a third of them died of SIGABRT."""
    models = str(with_minilm(tmp_path, minilm_dir))
    servers = [spawn("--models-dir", models) for _ in range(6)]
    for server in servers:
        server.ping()
    for number, server in enumerate(servers):
        time.sleep(0.1)
        if number % 2:
            server.terminate()
        else:
            server.close_stdin()
    assert [server.wait_exit(EXIT_CEILING_S) for server in servers] == [0] * len(servers)


class Bare:
    """The server on raw pipes (the contract Client's reader thread owns its stdout, which
    therefore cannot be closed under it): here the test plays a harness that stops reading."""

    def __init__(self, tmp_path: Path, *, slow: bool = False) -> None:
        env = clean_env(**DEADLINE)
        self.control = tmp_path / "control"
        if slow:
            self.control.mkdir()
            env["CONTRACT_CONTROL_DIR"] = str(self.control)
        self.stderr_path = tmp_path / "stderr.log"
        argv = memproc_argv(tmp_path / "memory.db", wrapper=SLOW_SERVER if slow else None)
        with open(self.stderr_path, "wb") as stderr:
            self.proc = subprocess.Popen(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, env=env
            )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout

    def send(self, line: bytes) -> None:
        self.stdin.write(line + b"\n")
        self.stdin.flush()

    def wait_started(self, name: str) -> None:
        deadline = time.monotonic() + EXIT_CEILING_S
        while not (self.control / f"started-{name}").exists():
            assert time.monotonic() < deadline, self.stderr_path.read_text()
            time.sleep(0.01)

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()
        self.stdin.close()
        self.stdout.close()


@pytest.fixture
def bare(tmp_path: Path) -> Iterator[Callable[..., Bare]]:
    started: list[Bare] = []

    def start(*, slow: bool = False) -> Bare:
        started.append(Bare(tmp_path, slow=slow))
        return started[-1]

    yield start
    for server in started:
        server.close()


def test_a_vanished_stdout_reader_ends_an_idle_process(bare: Callable[..., Bare]) -> None:
    """stdin stays open and nothing is ever written: only watching stdout can notice."""
    server = bare()
    server.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}')
    assert b'"result"' in server.stdout.readline()
    server.stdout.close()
    assert server.proc.wait(EXIT_CEILING_S) == 0
    assert "stdout closed; shutting down" in server.stderr_path.read_text()


def test_a_vanished_stdout_reader_cancels_a_long_request(bare: Callable[..., Bare]) -> None:
    """The harness is gone mid-request (stdin left open): the request is cancelled at the
    deadline rather than run to its end for nobody."""
    server = bare(slow=True)
    params = b'{"scope":"s","query":"block a"}'
    server.send(b'{"jsonrpc":"2.0","id":1,"method":"memory.search","params":' + params + b"}")
    server.wait_started("a")
    server.stdout.close()
    assert server.proc.wait(EXIT_CEILING_S) == 0
