"""Shared fixtures for the unit tests: real SQLite files in tmp_path, always closed, and a real
PostgreSQL server for the tests that need one."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.store import NewMemory, Store
from memproc.store.connection import ConnectionSettings
from memproc.store.postgres.database import PgStore
from memproc.store.storage import Storage
from pgkit import PgServer, fresh_database, running_server
from searchkit import OpenRuntime, opener, settle


def _new_memory(
    content: str, *, scope: str = "proj", kind: str = "note", **extra: object
) -> NewMemory:
    """A NewMemory with defaults for everything a test does not care about."""
    fields: dict[str, object] = {
        "scope": scope,
        "kind": kind,
        "content": content,
        "tags": [],
        "metadata": {},
        "source": {},
        "importance": 0.5,
        "client_token": None,
    }
    fields.update(extra)
    return NewMemory(**fields)  # type: ignore[arg-type]


@pytest.fixture
def db_path(tmp_path: Path) -> str:
    return str(tmp_path / "memory.db")


# Unit tests do not test durability (the crash suites run the real defaults): skipping the fsync
# at every commit makes them several times faster on a slow disk.
UNIT_SETTINGS = ConnectionSettings(synchronous="normal")


@pytest.fixture
def store(db_path: str) -> Iterator[Store]:
    """An SQLite store (tests of what only SQLite has: its file, its PRAGMAs, its plans);
    `any_store` runs a test on both stores."""
    opened = Store(db_path, UNIT_SETTINGS)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture
def new_memory() -> Callable[..., NewMemory]:
    """Build a NewMemory: `new_memory("text", scope=..., kind=..., tags=[...])`."""
    return _new_memory


@pytest.fixture
def make_runtime(tmp_path: Path) -> Iterator[Callable[..., Runtime]]:
    """Open a Runtime over a database in tmp_path with extra Config settings; closed at teardown."""
    opened: list[Runtime] = []

    def make(db: str | None = None, **settings: object) -> Runtime:
        settings.setdefault("synchronous", UNIT_SETTINGS.synchronous)
        config = Config(db=db or str(tmp_path / f"rt{len(opened)}.db"), **settings)  # type: ignore[arg-type]
        runtime = Runtime(config)
        opened.append(runtime)
        runtime.open_store()
        return runtime

    yield make
    for runtime in opened:
        runtime.close()


@pytest.fixture
def runtime(make_runtime: Callable[..., Runtime], db_path: str) -> Runtime:
    return make_runtime(db_path)


@pytest.fixture
def ctx(runtime: Runtime) -> OpContext:
    return OpContext(runtime=runtime)


# -- models ------------------------------------------------------------------------------------

REPO_ROOT = Path(__file__).resolve().parent.parent
MODELS_CACHE = REPO_ROOT / ".cache" / "models"


@pytest.fixture(scope="session")
def minilm_dir() -> Path:
    """The real all-MiniLM-L6-v2 int8 model, built once into <repo>/.cache/models (`make test`
    pulls it first; pulling again only re-verifies the hashes)."""
    from memproc.models.pull import pull

    return Path(pull("minilm-l6-int8", str(MODELS_CACHE)))


@pytest.fixture(scope="session")
def kept_minilm(minilm_dir: Path) -> object:
    """MiniLM loaded once per test process and kept: onnxruntime sessions are shared by graph
    file and thread count while a model holds one (memproc.models.runtime), so every Runtime a
    test opens over `minilm_dir` reuses this session instead of building its own."""
    from memproc.models.embedder import Embedder
    from memproc.models.manager import default_threads

    return Embedder(str(minilm_dir), threads=default_threads())


# -- a Runtime with the real MiniLM embedder, for the search tests -------------------------------


@pytest.fixture
def open_runtime(
    make_runtime: Callable[..., Runtime], minilm_dir: Path, kept_minilm: object
) -> Iterator[OpenRuntime]:
    """Open Runtimes with MiniLM loaded: `open_runtime(db=None, load=True, **settings)`."""
    yield opener(make_runtime, minilm_dir.parent)
    settle()


@pytest.fixture
def rt(open_runtime: OpenRuntime) -> Runtime:
    return open_runtime()


# -- PostgreSQL ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PgServer]:
    """A real PostgreSQL 16 + pgvector server of this test process (tests/pgkit.py), started on
    first use and stopped at the end of the session. If it cannot start, every test that uses
    it fails with the reason: the Postgres tests are never skipped."""
    with running_server() as server:
        yield server


@pytest.fixture
def pg_url(pg_server: PgServer) -> Iterator[str]:
    """The URL of a fresh, migrated database of its own on the session's server."""
    with fresh_database(pg_server) as database_url:
        yield database_url


@pytest.fixture
def pg_store(pg_url: str) -> Iterator[PgStore]:
    """A PgStore over a fresh database: the PostgreSQL twin of the `store` fixture."""
    opened = PgStore(pg_url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.fixture(params=["sqlite", "postgres"])
def any_store(request: pytest.FixtureRequest, db_path: str) -> Iterator[Storage]:
    """The same test on each store: an SQLite file, then a fresh PostgreSQL database."""
    opened: Storage
    if request.param == "sqlite":
        opened = Store(db_path, UNIT_SETTINGS)
    else:
        opened = PgStore(request.getfixturevalue("pg_url"))
    try:
        yield opened
    finally:
        opened.close()
