"""A stand-in harness for the orphan trials: spawns `memproc serve`, gives it work, then waits to
be killed with SIGKILL by the driver (stress_shutdown.py).

Why a separate process: the server's parent must die with the pipes it holds, as a crashed
harness would; the driver cannot do that to itself. The server's pid is written to a file
because once the parent is gone the server is re-parented and the driver cannot wait() for it.

usage: orphan_parent.py WORKDIR MODE STDERR [MODELS_DIR]
(MODE: see start_work; STDERR: file or pipe; MODELS_DIR for the "embedding" mode)
Writes WORKDIR/server.pid, then WORKDIR/ready once the work is under way.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import _paths  # noqa: F401
from client import SLOW_SERVER, clean_env, memproc_argv

MODES = ("idle", "long", "stuck-write", "writes")  # "embedding" too, given a models directory
LONG_TEXT = " ".join(f"Sentence {i} of a long note about the deploy pipeline." for i in range(30))


def spawn(workdir: Path, mode: str, stderr: str, models: str | None) -> subprocess.Popen[bytes]:
    slow = mode in ("long", "stuck-write")
    env = clean_env(MEMPROC_SHUTDOWN_DEADLINE_S="1")
    if slow:
        (workdir / "control").mkdir(exist_ok=True)
        env["CONTRACT_CONTROL_DIR"] = str(workdir / "control")
    flags = ["--models-dir", models] if models else []
    argv = memproc_argv(workdir / "memory.db", *flags, wrapper=SLOW_SERVER if slow else None)
    pipe = subprocess.PIPE
    if stderr == "pipe":
        return subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=pipe, env=env)
    with open(workdir / "server.err", "ab") as err:
        return subprocess.Popen(argv, stdin=pipe, stdout=pipe, stderr=err, env=env)


def send(server: subprocess.Popen[bytes], request_id: Any, method: str, params: Any) -> None:
    assert server.stdin is not None
    line = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
    server.stdin.write(json.dumps(line).encode() + b"\n")
    server.stdin.flush()


def start_work(server: subprocess.Popen[bytes], workdir: Path, mode: str) -> None:
    """idle: one ping answered. long: a search blocked in a worker (it honours cancellation).
    stuck-write: a write holding the write lock that ignores cancellation. writes: 200
    remembers written at once, none waited for. embedding: a batch of 300 long memories,
    embedded by the real model (which does not look at cancellation while it runs)."""
    assert server.stdout is not None
    send(server, 0, "ping", {})
    server.stdout.readline()  # up and serving
    if mode == "embedding":
        wait_for_embedder(server)
        items = [{"kind": "note", "content": f"{i}: {LONG_TEXT}"} for i in range(300)]
        send(server, 1, "memory.remember_batch", {"scope": "s", "items": items})
    if mode == "long":
        send(server, 1, "memory.search", {"scope": "s", "query": "block orphan"})
    elif mode == "stuck-write":
        content = "block-insert-quiet orphan never committed"
        send(server, 1, "memory.remember", {"scope": "s", "kind": "note", "content": content})
    elif mode == "writes":
        for i in range(200):
            params = {"scope": "s", "kind": "note", "content": f"orphan write {i}"}
            send(server, i + 1, "memory.remember", params)
    if mode in ("long", "stuck-write"):
        while not (workdir / "control" / "started-orphan").exists():
            time.sleep(0.01)


def wait_for_embedder(server: subprocess.Popen[bytes]) -> None:
    assert server.stdout is not None
    for attempt in range(6000):
        send(server, f"info-{attempt}", "server.info", {})
        info = json.loads(server.stdout.readline())["result"]
        if info["components"]["embedder"]["state"] == "ready":
            return
        time.sleep(0.01)
    raise SystemExit("orphan_parent: the embedder never became ready")


def main() -> None:
    workdir, mode, stderr = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    models = sys.argv[4] if len(sys.argv) > 4 else None
    server = spawn(workdir, mode, stderr, models)
    (workdir / "server.pid").write_text(str(server.pid))
    start_work(server, workdir, mode)
    (workdir / "ready").touch()
    while True:  # until the driver kills us
        time.sleep(60)


if __name__ == "__main__":
    main()
