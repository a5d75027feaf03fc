"""The workspace a resource fault runs in (tests/stress/stress_faults.py), and what a client sees.

A `Lab` is one fault's directory and the real `memproc serve` processes it starts; the helpers
turn responses into the figures the report prints, and `intact` is the one definition of
"nothing stored was lost or damaged" every fault is held to. `obey_modes_prefix` and
`namespace` stage the mechanisms that need more than a file operation, or say why they cannot.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _paths  # noqa: F401  (puts tests/contract on sys.path when run as a script)
from client import Client, ServerError, check_stream, clean_env, memproc_argv
from mount_namespace import MountNamespace, NamespaceUnavailable
from paging import every_item

from memproc.errors import MemprocError
from memproc.store import Store

LAUNCHER = Path(__file__).resolve().parent / "fault_launcher.py"
SCOPE = "faults"
PROBE_WRITE = "written while the fault holds"


class Skip(Exception):
    """This machine cannot stage the fault; the message says exactly why."""


@dataclass
class FaultFigures:
    """What one fault did, as the reliability report prints it."""

    fault: str
    mechanism: str
    ran: bool = False
    skipped: str | None = None
    # Each call made while the fault held: "ok", or the error's code, kind, reason, message.
    calls: dict[str, Any] = field(default_factory=dict)
    stayed_up: bool | None = None
    data_intact: bool | None = None  # None: nothing was stored that could be checked
    foreign_file_untouched: bool | None = None  # None: no foreign file involved
    recovered: str | None = None  # how service came back once the fault was removed
    counts: dict[str, int] = field(default_factory=dict)
    seconds: float = 0.0


# -- one fault's workspace --------------------------------------------------------------------


class Lab:
    """A fault's directory, its database path and the servers it starts (all closed at the
    end, each stream checked: stdout holds nothing but protocol messages)."""

    def __init__(self, base: Path, name: str) -> None:
        self.dir = base / name
        self.db_dir = self.dir / "db"
        self.db_dir.mkdir(parents=True)
        self.db = self.db_dir / "memory.db"
        self.no_models = self.dir / "no-models"  # outside db_dir: that may be read-only or full
        self.no_models.mkdir()
        self.clients: list[Client] = []

    def serve(
        self, *flags: str, prefix: list[str] | None = None, models: Path | None = None
    ) -> Client:
        models_flag = ["--models-dir", str(models or self.no_models)]
        client = Client(
            [*(prefix or []), *memproc_argv(self.db, *models_flag, *flags)],
            stderr_path=self.dir / f"server-{len(self.clients) + 1}.log",
            env=clean_env(),
            name=f"{self.dir.name}#{len(self.clients) + 1}",
        )
        self.clients.append(client)
        return client

    def close(self) -> None:
        for client in self.clients:
            client.close()
        for client in self.clients:
            check_stream(client)


@contextmanager
def lab(base: Path, name: str) -> Iterator[Lab]:
    opened = Lab(base, name)
    try:
        yield opened
    finally:
        opened.close()


# -- what a client sees -----------------------------------------------------------------------


def outcome(response: dict[str, Any]) -> Any:
    """The string "ok" for a result; for an error, the parts that the report prints."""
    if "result" in response:
        return "ok"
    error = response["error"]
    data = error.get("data", {})
    return {
        "code": error["code"],
        "kind": data.get("kind"),
        "reason": data.get("reason"),
        "retryable": data.get("retryable"),
        "message": error["message"],
    }


def remember(client: Client, content: str) -> dict[str, Any]:
    return client.call("memory.remember", {"scope": SCOPE, "kind": "note", "content": content})


def seed(client: Client, count: int, label: str) -> dict[str, str]:
    """Remember `count` memories, each of which must be acknowledged; id -> content."""
    stored: dict[str, str] = {}
    for number in range(count):
        content = f"{label} memory {number}: the build cache lives in .cache/{label}/{number}"
        response = acknowledge(client, content, stored)
        if "result" not in response:
            raise ServerError(f"{client.name}: seeding failed: {response['error']}")
    return stored


def probe_store(client: Client, expected: dict[str, str]) -> dict[str, Any]:
    """One read by id (of a stored memory, if any), one lexical search and one write, each as
    the client saw it. A write the fault did not stop joins `expected`: acknowledged means
    kept."""
    calls: dict[str, Any] = {}
    if expected:
        params = {"scope": SCOPE, "id": next(iter(expected))}
        calls["memory.get"] = outcome(client.call("memory.get", params))
    calls["memory.search lexical"] = outcome(
        client.call("memory.search", {"scope": SCOPE, "query": "build cache", "mode": "lexical"})
    )
    calls["memory.remember"] = outcome(acknowledge(client, PROBE_WRITE, expected))
    return calls


def acknowledge(client: Client, content: str, expected: dict[str, str]) -> dict[str, Any]:
    """Remember `content`; if acknowledged, it joins `expected`. The response."""
    response = remember(client, content)
    if "result" in response:
        expected[response["result"]["id"]] = content
    return response


def is_up(client: Client) -> bool:
    """The process answers ping and server.info (and has not exited)."""
    try:
        client.ping()
        client.result("server.info")
    except ServerError:
        return False
    return client.proc.poll() is None


def store_component(client: Client) -> dict[str, Any]:
    return client.wait_component("store")


# -- after the fault: is everything still there? ----------------------------------------------


def stored_memories(client: Client) -> dict[str, str]:
    """Every memory in the scope, id -> content, read page by page."""
    items = every_item(client, "memory.list", {"scope": SCOPE})
    return {item["id"]: item["content"] for item in items}


def intact(
    lab: Lab,
    expected: dict[str, str],
    *,
    prefix: list[str] | None = None,
    view: Callable[[Path], Path] = lambda path: path,
) -> bool:
    """Restart normally: exactly the `expected` memories (nothing lost, nothing refused slipped
    in), a clean exit, then `PRAGMA integrity_check` through memproc's own Store. A database
    the restart cannot read at all is not intact either."""
    server = lab.serve(prefix=prefix)
    try:
        found = stored_memories(server)
    except ServerError:
        return False
    if server.finish() != 0 or found != expected:
        return False
    try:
        store = Store(str(view(lab.db)))
    except MemprocError:
        return False
    try:
        return store.integrity_check() == ["ok"]
    except MemprocError:
        return False
    finally:
        store.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- staging a fault ---------------------------------------------------------------------------


def obey_modes_prefix(lab: Lab) -> list[str]:
    """Run a server so that file modes bind it even as root; Skip if they still do not."""
    prefix = [sys.executable, str(LAUNCHER), "--obey-file-modes", "--"]
    probe = lab.dir / "mode-probe"
    probe.mkdir()
    probe.chmod(0o555)
    attempt = f"""
try:
    open({str(probe / "x")!r}, "x")
    print("written")
except PermissionError:
    print("refused")
"""
    try:
        done = subprocess.run(
            [*prefix, sys.executable, "-c", attempt], capture_output=True, timeout=30, check=False
        )
    finally:
        probe.chmod(0o755)
    if done.stdout == b"written\n":
        raise Skip("a chmod 555 directory stays writable even with the DAC capabilities dropped")
    if done.stdout != b"refused\n":
        problem = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        raise Skip(f"fault_launcher could not stage it: {' '.join(problem)}")
    return prefix


@contextmanager
def namespace() -> Iterator[MountNamespace]:
    """A private mount namespace; Skip (with the reason) where this machine cannot make one or
    cannot mount in it."""
    try:
        space = MountNamespace()
    except NamespaceUnavailable as exc:
        raise Skip(str(exc)) from None
    try:
        yield space
    except NamespaceUnavailable as exc:
        raise Skip(str(exc)) from None
    finally:
        space.close()
