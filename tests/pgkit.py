"""A real PostgreSQL 16 + pgvector server that the test run starts and stops itself.

The server binaries come from the `pgserver` wheel on the package index, which bundles
PostgreSQL 16.2 and pgvector 0.6.2: `ensure_binaries` downloads the pinned wheel with pip,
checks its sha256 and unpacks only the server into .cache/postgres/. The pgserver Python package
is never installed or imported; its binaries are all we take. `make test` runs this module as a
script first (`python tests/pgkit.py fetch`), so the download happens once, before the suite.

`running_server()` gives each caller a private server: a temporary directory holding the
cluster and its unix socket, `postgres` listening on a free port of 127.0.0.1, a database with
the `vector` extension, and on the way out (a failed test included) a fast shutdown and the
directory removed. Everything that goes wrong raises `PgServerError` with the reason, the
server log's tail included, so a test that needs the server fails saying why; it never skips.

It lives in tests/ because only the tests run a server so far; memproc's dev tooling will need
it once the store runs on Postgres (issue 17), and it moves under src/memproc/ then.
"""

from __future__ import annotations

import hashlib
import os
import platform
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import zipfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

WHEEL = "pgserver==0.1.4"
POSTGRES_VERSION = "16.2"
PGVECTOR_VERSION = "0.6.2"
# The one platform these machines (and CI) are; another machine gets a clear error, not a guess.
WHEEL_PLATFORMS = {
    "x86_64": (
        "manylinux_2_17_x86_64",
        "d595789b47624a3d963aa9aa6359da9be31beb7e61f1a45541953242068b8813",
    ),
}
# The server (bin/, lib/, share/) and the shared libraries that auditwheel moved out of it;
# the tools find the latter through an RPATH relative to bin/, so the layout is kept as is.
UNPACKED = ("pgserver/pginstall/", "pgserver.libs/")
SKIPPED = ("pgserver/pginstall/include/",)  # headers, for building extensions: not needed

REPO_ROOT = Path(__file__).resolve().parent.parent
INSTALL_DIR = REPO_ROOT / ".cache" / "postgres" / f"{POSTGRES_VERSION}-pgvector-{PGVECTOR_VERSION}"
BIN = Path("pgserver") / "pginstall" / "bin"

# PostgreSQL refuses to run as root; a root test run hands the cluster to this user instead.
UNPRIVILEGED_USER = "nobody"
SUPERUSER = "postgres"
DATABASE = "memproc_test"
START_DEADLINE_S = 60.0
STOP_DEADLINE_S = 15.0
PORT_ATTEMPTS = 3  # another process may take the free port between our look and the bind
LOG_TAIL_LINES = 30

# The cluster lives as long as one test session and is thrown away: durability costs time and
# buys nothing here.
TEST_SETTINGS = {
    "listen_addresses": "127.0.0.1",
    "fsync": "off",
    "synchronous_commit": "off",
    "full_page_writes": "off",
}


class PgServerError(RuntimeError):
    """The test server could not be fetched, started or set up; the message says why."""


@dataclass(frozen=True)
class PgServer:
    """A running server: connect with `url` (TCP) or through the unix socket in `socket_dir`."""

    url: str
    port: int
    socket_dir: Path
    data_dir: Path
    log: Path
    pid: int


# -- the binaries ------------------------------------------------------------------------------


def ensure_binaries() -> Path:
    """The unpacked installation, fetched first if it is not there. Safe to call from several
    processes at once: each unpacks into its own scratch folder and the first rename wins."""
    if INSTALL_DIR.is_dir():
        return INSTALL_DIR
    platform_tag, sha256 = wheel_for(platform.machine())
    INSTALL_DIR.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=INSTALL_DIR.parent, prefix="fetch-") as scratch:
        wheel = download_wheel(Path(scratch), platform_tag)
        verify_sha256(wheel, sha256)
        staged = Path(scratch) / "install"
        unpack_server(wheel, staged)
        try:
            staged.rename(INSTALL_DIR)
        except OSError:
            if not INSTALL_DIR.is_dir():
                raise
    return INSTALL_DIR


def wheel_for(machine: str) -> tuple[str, str]:
    if machine not in WHEEL_PLATFORMS:
        raise PgServerError(
            f"no pinned {WHEEL} wheel for machine {machine!r} (pinned: {sorted(WHEEL_PLATFORMS)})"
        )
    return WHEEL_PLATFORMS[machine]


def download_wheel(dest: Path, platform_tag: str) -> Path:
    """pip fetches the wheel for that platform whatever Python runs this: the binaries inside do
    not depend on the interpreter, and the wheel is only published for CPython 3.11 and older."""
    command = [
        *(sys.executable, "-m", "pip", "download", WHEEL, "--no-deps", "--only-binary=:all:"),
        *("--python-version", "3.11", "--implementation", "cp", "--abi", "cp311"),
        *("--platform", platform_tag, "--dest", str(dest)),
        *("--quiet", "--disable-pip-version-check"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    wheels = sorted(dest.glob("pgserver-*.whl"))
    if done.returncode != 0 or len(wheels) != 1:
        raise PgServerError(f"could not download {WHEEL}: {done.stderr.strip()[-2000:]}")
    return wheels[0]


def verify_sha256(path: Path, expected: str) -> None:
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != expected:
        raise PgServerError(f"{path.name}: sha256 {digest}, expected {expected}")


def unpack_server(wheel: Path, dest: Path) -> None:
    """Unpack the server's files with their modes (zipfile alone drops the executable bits)."""
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.infolist():
            name = member.filename
            if not name.startswith(UNPACKED) or name.startswith(SKIPPED) or member.is_dir():
                continue
            target = Path(archive.extract(member, dest))
            target.chmod((member.external_attr >> 16) & 0o777 or 0o644)


# -- a running server --------------------------------------------------------------------------


@contextmanager
def running_server(settings: Mapping[str, str] | None = None) -> Iterator[PgServer]:
    """Start a private server (extra postgresql.conf `settings` on top of TEST_SETTINGS), yield
    it, then stop it and remove its directory however the body ended."""
    root = Path(tempfile.mkdtemp(prefix="memproc-pg-"))
    try:
        owner = server_owner()
        bin_dir = prepare(root, ensure_binaries(), owner)
        data_dir = root / "data"
        init_cluster(bin_dir, data_dir, owner)
        process, port = start(bin_dir, root, owner, {**TEST_SETTINGS, **(settings or {})})
        try:
            yield PgServer(
                url=create_database(port, root),
                port=port,
                socket_dir=root,
                data_dir=data_dir,
                log=root / "postgres.log",
                pid=process.pid,
            )
        finally:
            stop(process)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def server_owner() -> pwd.struct_passwd | None:
    """Who runs the server: this process's own user, or an unprivileged one when it is root."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(UNPRIVILEGED_USER)
    except KeyError:
        raise PgServerError(
            f"running as root and no user {UNPRIVILEGED_USER!r} to run postgres as"
        ) from None


def prepare(root: Path, install: Path, owner: pwd.struct_passwd | None) -> Path:
    """The bin/ folder to run. As root, the temporary directory goes to the unprivileged user
    and the server runs from a copy inside it: the checkout may sit where that user cannot go
    (under /root, say)."""
    if owner is None:
        return install / BIN
    copy = root / "install"
    shutil.copytree(install, copy)
    os.chown(root, owner.pw_uid, owner.pw_gid)
    return copy / BIN


def as_owner(owner: pwd.struct_passwd | None) -> dict[str, object]:
    """Popen arguments that run a child as `owner` (nothing when we are that user already)."""
    if owner is None:
        return {}
    return {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}


def init_cluster(bin_dir: Path, data_dir: Path, owner: pwd.struct_passwd | None) -> None:
    command = [
        str(bin_dir / "initdb"),
        *("--pgdata", str(data_dir), "--username", SUPERUSER, "--auth", "trust"),
        *("--encoding", "UTF8", "--locale", "C", "--no-sync"),
    ]
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, env=server_env(), **as_owner(owner)
    )
    if done.returncode != 0:
        raise PgServerError(f"initdb failed ({done.returncode}): {done.stderr.strip()[-2000:]}")


def server_env() -> dict[str, str]:
    """A plain environment: no PG* variable or locale of the caller's leaks into the server."""
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"}


def start(
    bin_dir: Path, root: Path, owner: pwd.struct_passwd | None, settings: Mapping[str, str]
) -> tuple[subprocess.Popen[bytes], int]:
    """Start postgres on a free port and wait until it accepts connections. Only a port taken
    in the meantime is tried again; any other failure raises with the log's tail."""
    for _ in range(PORT_ATTEMPTS):
        port = free_port()
        process = launch(bin_dir, root, owner, port, settings)
        if wait_ready(process, port, root / "postgres.log"):
            return process, port
    raise PgServerError(f"no free port after {PORT_ATTEMPTS} attempts:\n{log_tail(root)}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def launch(
    bin_dir: Path,
    root: Path,
    owner: pwd.struct_passwd | None,
    port: int,
    settings: Mapping[str, str],
) -> subprocess.Popen[bytes]:
    """The postmaster as our own child, in its own process group (so that a kill at teardown
    reaches its backends too), logging to root/postgres.log."""
    command = [str(bin_dir / "postgres"), "-D", str(root / "data"), "-p", str(port)]
    command += ["-c", f"unix_socket_directories={root}"]
    for name, value in settings.items():
        command += ["-c", f"{name}={value}"]
    with open(root / "postgres.log", "wb") as log:
        return subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=server_env(),
            start_new_session=True,
            **as_owner(owner),
        )


def wait_ready(process: subprocess.Popen[bytes], port: int, log: Path) -> bool:
    """True once the server answers; False if it exited because the port was taken."""
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            if "Address already in use" in log.read_text(errors="replace"):
                return False
            raise PgServerError(
                f"postgres exited with {process.returncode}:\n{log_tail(log.parent)}"
            )
        try:
            psycopg.connect(url(port, "postgres"), connect_timeout=2).close()
            return True
        except psycopg.OperationalError:
            time.sleep(0.05)
    stop(process)
    raise PgServerError(
        f"postgres did not accept connections within {START_DEADLINE_S}s:\n{log_tail(log.parent)}"
    )


def create_database(port: int, root: Path) -> str:
    """Create the test database with pgvector in it; its URL."""
    try:
        with psycopg.connect(url(port, "postgres"), autocommit=True) as admin:
            admin.execute(f"CREATE DATABASE {DATABASE}")
        with psycopg.connect(url(port, DATABASE), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION vector")
    except psycopg.Error as error:
        raise PgServerError(f"could not set up {DATABASE}: {error}\n{log_tail(root)}") from error
    return url(port, DATABASE)


def url(port: int, database: str) -> str:
    return f"postgresql://{SUPERUSER}@127.0.0.1:{port}/{database}"


def stop(process: subprocess.Popen[bytes]) -> None:
    """Fast shutdown: SIGINT to the postmaster, which is what `pg_ctl stop -m fast` sends (and
    pg_ctl itself would refuse to run as root). Whatever is still alive after the deadline is
    killed, backends included."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        process.wait(STOP_DEADLINE_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def log_tail(root: Path) -> str:
    try:
        lines = (root / "postgres.log").read_text(errors="replace").splitlines()
    except OSError as error:
        return f"(no server log: {error})"
    return "\n".join(lines[-LOG_TAIL_LINES:])


if __name__ == "__main__":
    if sys.argv[1:] != ["fetch"]:
        sys.exit("usage: python tests/pgkit.py fetch")
    try:
        print(f"postgres binaries in {ensure_binaries()}", file=sys.stderr)
    except PgServerError as error:
        sys.exit(f"pgkit fetch: {error}")


# -- a fresh database per test ------------------------------------------------------------------

TEMPLATE = "memproc_template"


def migrated_template(server: PgServer) -> str:
    """A database holding memproc's schema, created once per server, from which each test's
    database is copied (CREATE DATABASE ... TEMPLATE copies files: far faster than migrating).
    No connection may stay open to it, or the copy is refused."""
    from memproc.store.postgres.database import PgStore

    with psycopg.connect(url(server.port, "postgres"), autocommit=True) as admin:
        exists = admin.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", (TEMPLATE,)
        ).fetchone()
        if exists is None:
            admin.execute(f"CREATE DATABASE {TEMPLATE}")
            PgStore(url(server.port, TEMPLATE)).close()
    return TEMPLATE


@contextmanager
def fresh_database(server: PgServer) -> Iterator[str]:
    """A new migrated database on `server` for one test: its URL; dropped afterwards."""
    template = migrated_template(server)
    name = f"t_{os.getpid()}_{time.monotonic_ns()}"
    with psycopg.connect(url(server.port, "postgres"), autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    try:
        yield url(server.port, name)
    finally:
        with psycopg.connect(url(server.port, "postgres"), autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
