"""Fixtures for the contract tests: spawn real memproc processes and always clean them up.

Every process a test starts is checked when the test ends: each line it wrote to stdout must be
a well-formed JSON-RPC response, and every error must carry `data.kind` and `data.retryable`.
When a test fails, the stderr of every process still running is attached to the report.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
from client import SLOW_SERVER, Client, Spawn, check_stream, clean_env, memproc_argv

_ACTIVE: list[Client] = []


class Spawner:
    """Starts clients in one directory and cleans all of them up, then checks their streams."""

    def __init__(self, directory: Path, db: Path) -> None:
        self.directory = directory
        self.db = db
        self.clients: list[Client] = []

    def start(
        self,
        *flags: str,
        db: Path | None = None,
        wrapper: Path | None = None,
        env: dict[str, str] | None = None,
    ) -> Client:
        number = len(self.clients) + 1
        extra_env = dict(env or {})
        control_dir = None
        if wrapper == SLOW_SERVER:
            control_dir = self.directory / f"control-{number}"
            control_dir.mkdir()
            extra_env["CONTRACT_CONTROL_DIR"] = str(control_dir)
        client = Client(
            memproc_argv(db or self.db, *flags, wrapper=wrapper),
            stderr_path=self.directory / f"stderr-{number}.log",
            env=clean_env(**extra_env),
            control_dir=control_dir,
            name=f"memproc#{number}" + ("" if wrapper is None else f" ({wrapper.name})"),
        )
        self.clients.append(client)
        _ACTIVE.append(client)
        return client

    def close_all(self) -> None:
        with ExitStack() as stack:  # every client is closed even if one close fails
            for client in self.clients:
                stack.callback(client.close)
                stack.callback(_ACTIVE.remove, client)
        for client in self.clients:
            check_stream(client)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memory.db"


@pytest.fixture
def spawn(tmp_path: Path, db_path: Path) -> Iterator[Spawn]:
    """spawn(*flags, db=, wrapper=, env=) -> a running Client; all are cleaned up after."""
    spawner = Spawner(tmp_path, db_path)
    yield spawner.start
    spawner.close_all()


@pytest.fixture(scope="module")
def module_spawn(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Spawn]:
    """Like `spawn`, for a server shared by every test in a module."""
    directory = tmp_path_factory.mktemp("shared")
    spawner = Spawner(directory, directory / "memory.db")
    yield spawner.start
    spawner.close_all()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Any]:
    """Spawn transports and memproc.client clients, all closed after (tests of the client)."""
    from pyclient_kit import open_servers

    yield from open_servers(tmp_path)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    if report.failed:
        for client in _ACTIVE:
            report.sections.append((f"{client.name} stderr", client.stderr_tail()))
    return report


# The embedder the contract tests load by name, from the model the test session pulled.
EMBEDDER = "minilm-l6-int8"


@pytest.fixture
def models_dir(tmp_path: Path, minilm_dir: Path) -> Path:
    """A models folder holding MiniLM under its catalog name, for `serve --models-dir`."""
    models = tmp_path / "models"
    models.mkdir()
    (models / EMBEDDER).symlink_to(minilm_dir, target_is_directory=True)
    return models
