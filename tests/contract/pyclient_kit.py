"""Starting `memproc.client` clients against the real process for the client's own tests.

The servers load no model (`--embedder none --reranker none`, an empty models directory) and
see no MEMPROC_* setting from outside; the slow wrapper (`slow_server.py`) gets its control
directory. Every client a test makes is closed when it ends, and its processes must be gone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from client import SLOW_SERVER, clean_env, memproc_argv

from memproc.client import AsyncClient, Client, Spawn

NO_MODELS = ("--embedder", "none", "--reranker", "none")
DEADLINE_S = 10.0


@dataclass
class Servers:
    """Makes `Spawn` transports in one directory (one database unless told otherwise)."""

    directory: Path
    clients: list[Client | AsyncClient] = field(default_factory=list)
    processes: list[Any] = field(default_factory=list)
    control: Path | None = None

    @property
    def db(self) -> Path:
        return self.directory / "memory.db"

    def spawn(self, *flags: str, slow: bool = False, restarts: int = 0) -> Spawn:
        env = {}
        if slow:
            self.control = self.directory / "control"
            self.control.mkdir(exist_ok=True)
            env["CONTRACT_CONTROL_DIR"] = str(self.control)
        wrapper = SLOW_SERVER if slow else None
        argv = memproc_argv(self.db, *NO_MODELS, *flags, wrapper=wrapper)
        return Spawn(command=argv, env=clean_env(**env), restarts=restarts)

    def client(self, *flags: str, slow: bool = False, restarts: int = 0, **options: Any) -> Client:
        options.setdefault("timeout", DEADLINE_S)
        made = Client(self.spawn(*flags, slow=slow, restarts=restarts), **options)
        self.clients.append(made)
        return made

    def async_client(self, *flags: str, slow: bool = False, **options: Any) -> AsyncClient:
        options.setdefault("timeout", DEADLINE_S)
        made = AsyncClient(self.spawn(*flags, slow=slow), **options)
        self.clients.append(made)
        return made

    # -- the slow wrapper's control files ---------------------------------------------------

    def started(self, name: str) -> bool:
        assert self.control is not None
        return (self.control / f"started-{name}").exists()

    def wait_started(self, name: str, timeout: float = DEADLINE_S) -> None:
        """Wait until the wrapper's blocking handler `name` runs in a worker (polled: the
        marker is a file the child creates)."""
        deadline = time.monotonic() + timeout
        while not self.started(name):
            if time.monotonic() > deadline:
                raise AssertionError(f"{name} never started")
            threading.Event().wait(0.01)

    def release(self, name: str) -> None:
        assert self.control is not None
        (self.control / f"release-{name}").touch()

    def close(self) -> None:
        if self.control is not None:
            (self.control / "release-all").touch()
        for made in self.clients:
            if isinstance(made, Client):
                made.close()
            else:
                made._core.close(DEADLINE_S)  # an async client closes the same way, loop or not


def open_servers(tmp_path: Path) -> Iterator[Servers]:
    """The `servers` fixture (tests/contract/conftest.py)."""
    made = Servers(tmp_path)
    pids: list[int] = []
    try:
        yield made
    finally:
        for each in made.clients:
            process = each.process
            if process is not None:
                pids.append(process.pid)
        made.close()
    for pid in pids:  # every child the clients started has exited (and was reaped)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        raise AssertionError(f"server process {pid} is still running after close")
