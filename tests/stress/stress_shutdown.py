"""Shutdown: end of input, SIGTERM, a parent that dies and a stdout nobody reads.

What it shows, against real `memproc serve` processes and real SQLite files:

1. EOF with requests in flight (held: workers blocked in tests/contract/slow_server.py while
   the rest queue; pipelined: a plain server given every line and its EOF in one write): every
   request is answered once, the process exits 0, and every acknowledged write is there after
   a restart.
2. SIGTERM with requests in flight: each is answered (or, past `shutdown_deadline_s`, answered
   -32800 and not applied), and the process exits 0 within the deadline plus a small slack,
   even when a request ignores its cancellation while holding the write lock.
3. Orphans: a stand-in harness (orphan_parent.py) spawns the server, gives it work and is
   killed with SIGKILL; the server must exit by itself. Also: our stdout's reader goes away
   while stdin stays open.

Long mode: `.venv/bin/python tests/stress/stress_shutdown.py --help`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _paths  # noqa: F401
import apsw
from client import SLOW_SERVER, Client, check_stream, clean_env, memproc_argv
from orphan_parent import LONG_TEXT
from orphan_parent import MODES as ORPHAN_MODES
from paging import every_item

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
ORPHAN_PARENT = HERE / "orphan_parent.py"
CANCELLED = -32800
SCOPE = "s"
WAIT_S = 60.0
DEADLINE_S = 1.0  # shutdown_deadline_s for the SIGTERM and orphan trials (orphan_parent.py too)
GRACE_S = 1.0  # service.CANCEL_GRACE_S: how long cancelled work gets before it is abandoned
EXIT_SLACK_S = 5.0  # process start-up, teardown and a busy machine, beyond deadline and grace
ORPHAN_BOUND_S = DEADLINE_S + GRACE_S + EXIT_SLACK_S


class Servers:
    """Numbered servers on one database, each with its own stderr file (and control directory
    for the slow wrapper)."""

    def __init__(self, workdir: Path, name: str) -> None:
        self.workdir = workdir / name
        self.workdir.mkdir()
        self.db = self.workdir / "memory.db"
        self.started: list[Client] = []

    def start(self, *flags: str, slow: bool = False, **env: str) -> Client:
        number = len(self.started) + 1
        control = None
        if slow:
            control = self.workdir / f"control-{number}"
            control.mkdir()
            env["CONTRACT_CONTROL_DIR"] = str(control)
        server = Client(
            memproc_argv(self.db, *flags, wrapper=SLOW_SERVER if slow else None),
            stderr_path=self.workdir / f"stderr-{number}.log",
            env=clean_env(**env),
            control_dir=control,
            name=f"{self.workdir.name}#{number}",
        )
        self.started.append(server)
        return server

    def __enter__(self) -> Servers:
        return self

    def __exit__(self, *exc: object) -> None:
        for server in self.started:
            server.close()


def run(
    workdir: Path, *, in_flight: int = 50, orphan_trials: int = 4, models_dir: Path | None = None
) -> dict[str, Any]:
    """Every scenario once (the orphan trials cycle through the modes); the figures. With a
    models directory, also SIGTERM and a killed parent during a real embedding."""
    figures: dict[str, Any] = {}
    with Servers(workdir, "eof-held") as servers:
        figures["eof_held"] = _eof_held(servers, in_flight)
    with Servers(workdir, "eof-pipelined") as servers:
        figures["eof_pipelined"] = _eof_pipelined(servers, in_flight)
    with Servers(workdir, "sigterm-cooperative") as servers:
        figures["sigterm_cooperative"] = _sigterm(servers, stubborn=False)
    with Servers(workdir, "sigterm-stubborn") as servers:
        figures["sigterm_stubborn"] = _sigterm(servers, stubborn=True)
    if models_dir is not None:
        with Servers(workdir, "sigterm-embedding") as servers:
            figures["sigterm_embedding"] = _sigterm_embedding(servers, models_dir)
    figures["stdout_closed"] = _stdout_closed(workdir / "stdout-closed")
    modes = ORPHAN_MODES + (("embedding",) if models_dir is not None else ())
    trials = [
        _orphan(workdir / f"orphan-{i}", modes[i % len(modes)], i // len(modes), models_dir)
        for i in range(orphan_trials)
    ]
    figures["orphans"] = {
        "trials": len(trials),
        "survivors": sum(1 for t in trials if t["survived"]),
        "slowest_exit_s": max(t["exit_s"] for t in trials),
        "bound_s": ORPHAN_BOUND_S,
        "by_trial": trials,
    }
    return figures


# -- end of input ------------------------------------------------------------------------------


Request = tuple[str, dict[str, Any]]


def remember(content: str, **extra: str) -> Request:
    return "memory.remember", {"scope": SCOPE, "kind": "note", "content": content, **extra}


def search(query: str, scope: str = SCOPE) -> Request:
    return "memory.search", {"scope": scope, "query": query}


def _mixed_requests(count: int, tag: str) -> list[Request]:
    """Mostly writes (remember, checkpoint.save), some reads, each write identifiable."""
    requests: list[Request] = []
    for i in range(count):
        if i % 5 == 4:
            requests.append(search(f"{tag} write"))
        elif i % 10 == 3:
            checkpoint = {"scope": SCOPE, "task": f"{tag}-{i}", "summary": f"{tag} checkpoint"}
            requests.append(("checkpoint.save", checkpoint))
        else:
            requests.append(remember(f"{tag} write {i}", client_token=f"{tag}-{i}"))
    return requests


def _send_held(server: Client, held: list[tuple[Request, str]]) -> list[Any]:
    """Send each request and wait until its handler blocks in a worker; (id, method, params)."""
    sent = []
    for (method, params), name in held:
        sent.append((server.request(method, params), method, params))
        server.wait_started(name)
    return sent


def _eof_held(servers: Servers, count: int) -> dict[str, Any]:
    """Three workers, each blocked (two searches and a write holding the write lock), the
    rest queued behind them; EOF; then release: everything is answered. The searches read
    scopes of their own: a write waits for the reads sent before it on its scope."""
    server = servers.start("--workers", "3", slow=True)
    held = [
        (search("block eof-a", scope="held-a"), "eof-a"),
        (search("block eof-b", scope="held-b"), "eof-b"),
        (remember("block-insert-quiet eof-w held write"), "eof-w"),
    ]
    sent = _send_held(server, held)
    for method, params in _mixed_requests(count - len(held), "eof-held"):
        sent.append((server.request(method, params), method, params))
    server.close_stdin()
    server.wait_stderr("input closed")
    answered_before_release = sum(1 for request_id, _, _ in sent if server.responses(request_id))
    server.release("all")
    status = server.wait_exit(WAIT_S)
    figures = _outcome(server, sent, status)
    figures["in_flight_at_eof"] = count - answered_before_release
    figures["server_in_flight_at_eof"] = _logged_in_flight(server)
    figures["missing_after_restart"] = _missing(servers.start(), server, sent)
    return figures


def _eof_pipelined(servers: Servers, count: int) -> dict[str, Any]:
    """A plain server given every request and then EOF in a single write."""
    server = servers.start()
    server.ping()
    sent, lines = [], []
    for method, params in _mixed_requests(count, "eof-piped"):
        request_id = server.new_id()
        sent.append((request_id, method, params))
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        lines.append(json.dumps(message).encode() + b"\n")
    server.send_raw(b"".join(lines))
    server.close_stdin()
    status = server.wait_exit(WAIT_S)
    figures = _outcome(server, sent, status)
    figures["server_in_flight_at_eof"] = _logged_in_flight(server)
    figures["missing_after_restart"] = _missing(servers.start(), server, sent)
    return figures


# -- SIGTERM -----------------------------------------------------------------------------------


def _sigterm(servers: Servers, *, stubborn: bool) -> dict[str, Any]:
    """Four workers: two blocked searches and a blocked write, which either honours its
    cancellation (it keeps SQLite busy, so the progress handler interrupts it) or, stubborn,
    ignores it while holding the write lock; the fourth worker serves the queue until the
    deadline (all of it on the held write's scope, so it waits for that write by the ordering
    rule). The searches read scopes of their own, or the write would wait for them."""
    deadline = {"MEMPROC_SHUTDOWN_DEADLINE_S": str(DEADLINE_S)}
    server = servers.start("--workers", "4", slow=True, **deadline)
    block = "block-insert-quiet" if stubborn else "block-insert"
    held = [
        (search("block term-a", scope="held-a"), "term-a"),
        (search("block term-b", scope="held-b"), "term-b"),
        (remember(f"{block} term-w held write"), "term-w"),
    ]
    sent = _send_held(server, held)
    queued: list[Request] = [("memory.list", {"scope": SCOPE})] * 10
    queued += _mixed_requests(20, "term")
    for method, params in queued:
        sent.append((server.request(method, params), method, params))
    server.ping()  # the reader has queued everything before the signal
    started = time.monotonic()
    server.terminate()
    status = server.wait_exit(WAIT_S)
    figures = _outcome(server, sent, status)
    figures["exit_s"] = round(time.monotonic() - started, 2)
    figures["deadline_s"] = DEADLINE_S
    figures["missing_after_restart"] = _missing(servers.start(), server, sent)
    figures["cancelled_but_present"] = _cancelled_but_present(servers.start(), server, sent)
    return figures


def _sigterm_embedding(servers: Servers, models_dir: Path) -> dict[str, Any]:
    """SIGTERM while the real model embeds a large batch (it does not look at cancellation
    while it runs): the batch is answered, -32800 and absent or a result and present."""
    deadline = {"MEMPROC_SHUTDOWN_DEADLINE_S": str(DEADLINE_S)}
    server = servers.start("--models-dir", str(models_dir), **deadline)
    embedder = server.wait_component("embedder", WAIT_S)
    if embedder["state"] != "ready":
        raise AssertionError(f"the embedder did not load: {embedder}")
    items = [{"kind": "note", "content": f"{i}: {LONG_TEXT}"} for i in range(300)]
    batch = ("memory.remember_batch", {"scope": SCOPE, "items": items})
    sent = [(server.request(method, params), method, params) for method, params in [batch]]
    for method, params in _mixed_requests(10, "embedding"):
        sent.append((server.request(method, params), method, params))
    server.ping()
    started = time.monotonic()
    server.terminate()
    status = server.wait_exit(WAIT_S)
    figures = _outcome(server, sent, status)
    figures["exit_s"] = round(time.monotonic() - started, 2)
    figures["deadline_s"] = DEADLINE_S
    answers = server.responses(sent[0][0])
    restarted = servers.start()
    stored = _stored_contents(restarted)
    restarted.finish(WAIT_S)
    if not answers:
        figures["batch"] = "unanswered"
    else:
        figures["batch"] = "applied" if "result" in answers[0] else answers[0]["error"]["code"]
    figures["batch_items_stored"] = sum(1 for item in items if item["content"] in stored)
    return figures


# -- outcomes ----------------------------------------------------------------------------------


def _outcome(server: Client, sent: list[Any], status: int) -> dict[str, Any]:
    """Answered exactly once / sent, and errors by code."""
    check_stream(server)
    answers = [server.responses(request_id) for request_id, _, _ in sent]
    errors: dict[str, int] = {}
    for responses in answers:
        for response in responses:
            if "error" in response:
                code = str(response["error"]["code"])
                errors[code] = errors.get(code, 0) + 1
    return {
        "sent": len(sent),
        "answered_once": sum(1 for responses in answers if len(responses) == 1),
        "exit_status": status,
        "errors_by_code": dict(sorted(errors.items())),
    }


def _logged_in_flight(server: Client) -> int | None:
    """How many requests the server itself counted in flight when its input closed."""
    for line in server.stderr_text().splitlines():
        if line.startswith("{"):
            entry = json.loads(line)
            if entry.get("msg", "").startswith("input closed"):
                return int(entry["in_flight"])
    return None


def _acknowledged(server: Client, sent: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    """The writes that got a result, as (method, params)."""
    acked = []
    for request_id, method, params in sent:
        results = [r for r in server.responses(request_id) if "result" in r]
        if method in ("memory.remember", "checkpoint.save") and results:
            acked.append((method, params))
    return acked


def _missing(restarted: Client, server: Client, sent: list[Any]) -> int:
    """Acknowledged writes that a fresh process cannot find."""
    contents = _stored_contents(restarted)
    missing = 0
    for method, params in _acknowledged(server, sent):
        if method == "memory.remember":
            missing += params["content"] not in contents
        else:
            found = restarted.call("checkpoint.get", {"scope": SCOPE, "task": params["task"]})
            missing += "result" not in found
    restarted.finish(WAIT_S)
    return missing


def _cancelled_but_present(restarted: Client, server: Client, sent: list[Any]) -> int:
    """Writes answered -32800 whose content is stored anyway (must be 0: -32800 means that
    nothing was applied)."""
    contents = _stored_contents(restarted)
    present = 0
    for request_id, method, params in sent:
        codes = [r["error"]["code"] for r in server.responses(request_id) if "error" in r]
        if method == "memory.remember" and CANCELLED in codes:
            present += params["content"] in contents
    restarted.finish(WAIT_S)
    return present


def _stored_contents(server: Client) -> set[str]:
    return {item["content"] for item in every_item(server, "memory.list", {"scope": SCOPE})}


# -- orphans -----------------------------------------------------------------------------------


def _orphan(workdir: Path, mode: str, round_: int, models_dir: Path | None) -> dict[str, Any]:
    """Kill a harness that holds the server's pipes; time how long the server outlives it.
    Odd rounds give the server's stderr to the parent as a pipe, which dies with it too."""
    workdir.mkdir()
    stderr = ("file", "pipe")[round_ % 2]
    argv = [sys.executable, str(ORPHAN_PARENT), str(workdir), mode, stderr]
    if mode == "embedding":
        argv.append(str(models_dir))
    with open(workdir / "parent.err", "wb") as parent_err:
        parent = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=parent_err,
        )
    try:
        _wait_file(workdir / "ready", parent)
        pid = int((workdir / "server.pid").read_text())
        os.kill(parent.pid, signal.SIGKILL)
        killed = time.monotonic()
        exited = _wait_gone(pid, ORPHAN_BOUND_S + 10)
        exit_s = time.monotonic() - killed
        if not exited:
            os.kill(pid, signal.SIGKILL)
    finally:
        parent.kill()
        parent.wait()
    return {
        "mode": mode,
        "stderr": stderr,
        "exit_s": round(exit_s, 2),
        "survived": not exited or exit_s > ORPHAN_BOUND_S,
        "integrity": _integrity(workdir / "memory.db"),
    }


def _stdout_closed(workdir: Path) -> dict[str, Any]:
    """The reader of our stdout goes away while stdin stays open: the server must notice and
    exit (not wait for input forever, nor spin)."""
    workdir.mkdir()
    env = clean_env(MEMPROC_SHUTDOWN_DEADLINE_S=str(DEADLINE_S))
    with open(workdir / "stderr.log", "wb") as err:
        server = subprocess.Popen(
            memproc_argv(workdir / "memory.db"),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=env,
        )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        server.stdin.flush()
        server.stdout.readline()
        server.stdout.close()
        closed = time.monotonic()
        try:
            status = server.wait(ORPHAN_BOUND_S + 10)
        except subprocess.TimeoutExpired:
            status = None
        exit_s = time.monotonic() - closed
    finally:
        server.kill()
        server.wait()
        server.stdin.close()
    return {"exit_s": round(exit_s, 2), "exit_status": status, "bound_s": ORPHAN_BOUND_S}


def _wait_file(path: Path, parent: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        if parent.poll() is not None or time.monotonic() > deadline:
            raise AssertionError(f"orphan parent failed: {path.parent / 'parent.err'}")
        time.sleep(0.01)


def _wait_gone(pid: int, timeout: float) -> bool:
    """Poll /proc until `pid` has exited (gone, or a zombie nobody reaped: re-parented, it is
    not our child, and the container's init may not reap)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except (FileNotFoundError, ProcessLookupError):
            return True
        if stat.rpartition(")")[2].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.01)
    return False


def _integrity(db: Path) -> str:
    if not db.exists():
        return "no database"
    connection = apsw.Connection(str(db))
    try:
        return "; ".join(row[0] for row in connection.execute("PRAGMA integrity_check"))
    finally:
        connection.close()


# -- long mode ---------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--in-flight", type=int, default=50)
    parser.add_argument("--orphan-trials", type=int, default=20)
    parser.add_argument("--models-dir", type=Path, default=REPO / ".cache" / "models")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="memproc-shutdown-") as tmp:
        figures = run(
            Path(tmp),
            in_flight=args.in_flight,
            orphan_trials=args.orphan_trials,
            models_dir=args.models_dir,
        )
    json.dump(figures, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
