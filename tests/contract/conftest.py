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

from pgkit import fresh_database

_ACTIVE: list[Client] = []


class Spawner:
    """Starts clients in one directory and cleans all of them up, then checks their streams."""

    def __init__(self, directory: Path, db: Path | str) -> None:
        self.directory = directory
        self.db = db
        self.clients: list[Client] = []

    def start(
        self,
        *flags: str,
        db: Path | str | None = None,
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
            memproc_argv(db or self.db, *flags, wrapper=wrapper, workdir=self.directory),
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


# Every contract test that spawns a server runs once on each store: an SQLite file, then a
# fresh database on the test session's PostgreSQL server. A test that is about the SQLite
# file itself is marked `sqlite_only` with its reason and runs on SQLite alone.
STORES = ("sqlite", "postgres")


@pytest.fixture(params=STORES)
def db_path(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """The store the test's servers use: a file path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return tmp_path / "memory.db"
    url: str = request.getfixturevalue("pg_url")
    return url


@pytest.fixture
def store_kind(db_path: Path | str) -> str:
    """ "sqlite" or "postgres": which store the test's servers use."""
    return "sqlite" if isinstance(db_path, Path) else "postgres"


@pytest.fixture
def spawn(tmp_path: Path, db_path: Path | str) -> Iterator[Spawn]:
    """spawn(*flags, db=, wrapper=, env=) -> a running Client; all are cleaned up after."""
    spawner = Spawner(tmp_path, db_path)
    yield spawner.start
    spawner.close_all()


@pytest.fixture(scope="module", params=STORES)
def module_spawn(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Spawn]:
    """Like `spawn`, for a server shared by every test in a module (on each store)."""
    directory = tmp_path_factory.mktemp("shared")
    with ExitStack() as stack:
        db: Path | str = directory / "memory.db"
        if request.param == "postgres":
            server = request.getfixturevalue("pg_server")
            db = stack.enter_context(fresh_database(server))
        spawner = Spawner(directory, db)
        yield spawner.start
        spawner.close_all()


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run a `sqlite_only` test on SQLite alone (its mark says why)."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and "postgres" in callspec.id.split("-")
        if on_postgres and item.get_closest_marker("sqlite_only") is not None:
            dropped.append(item)
        else:
            kept.append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


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
