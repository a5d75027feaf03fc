"""What a real `memproc serve` on PostgreSQL answers when the server misbehaves (issue 17): a
server that cannot be reached at start-up, connections the server drops, a statement over the
timeout, a database written by newer code. In each: the typed error of the error table, the
process stays up, nothing acknowledged is lost, and service comes back when the fault is gone.
These are about the server, so they run on PostgreSQL alone."""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from client import Client, assert_error, check_stream, clean_env, memproc_argv

STORAGE_BUSY = -32000
STORAGE_UNAVAILABLE = -32005
POOL_SIZE = 3

Start = Callable[..., Client]


@pytest.fixture
def start(tmp_path: Path) -> Iterator[Start]:
    """start(db, env=) -> a running `memproc serve` on `db`; every one is closed and its
    stdout checked afterwards."""
    clients: list[Client] = []

    def launch(db: str, env: dict[str, str] | None = None) -> Client:
        number = len(clients) + 1
        client = Client(
            memproc_argv(db, workdir=tmp_path),
            stderr_path=tmp_path / f"stderr-{number}.log",
            env=clean_env(MEMPROC_DB_POOL_SIZE=str(POOL_SIZE), **(env or {})),
            name=f"memproc#{number}",
        )
        clients.append(client)
        return client

    yield launch
    for client in clients:
        client.close()
    for client in clients:
        check_stream(client)


def _remember(client: Client, content: str, token: str) -> dict[str, Any]:
    return client.call(
        "memory.remember",
        {"scope": "proj", "kind": "note", "content": content, "client_token": token},
    )


def _contents(url: str) -> list[str]:
    with psycopg.connect(url) as conn:
        rows = conn.execute("SELECT content FROM memories ORDER BY seq").fetchall()
    return [content for (content,) in rows]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_an_unreachable_server_keeps_the_process_up_and_says_why(start: Start) -> None:
    """Nothing listens at the URL: the process answers, every store call is
    storage_unavailable with reason `unreachable`, and the password is never written."""
    client = start(f"postgresql://memproc:hunter2secret@127.0.0.1:{_free_port()}/memory")
    client.ping()
    for response in (
        _remember(client, "a decision", "t1"),
        client.call("memory.search", {"scope": "proj", "query": "decision", "mode": "lexical"}),
    ):
        data = assert_error(response, STORAGE_UNAVAILABLE)
        assert data["reason"] == "unreachable"
        assert data["retryable"] is False
    client.ping()
    assert client.finish() == 0
    assert "hunter2secret" not in client.stderr_text()


def test_dropped_connections_are_retryable_and_nothing_acknowledged_is_lost(
    start: Start, pg_url: str
) -> None:
    """The server ends every connection of the process (as a restart or a failover does):
    calls on the dead connections get storage_busy, retryable, the pool replaces them, and a
    write retried with its client_token is stored once, beside everything acknowledged."""
    client = start(pg_url)
    for number in range(POOL_SIZE):  # every pooled connection has been used
        assert "result" in _remember(client, f"before {number}", f"before-{number}")
    with psycopg.connect(pg_url, autocommit=True) as admin:
        ended = admin.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert ended is not None and ended[0] >= 1
    outcomes = []
    for _ in range(POOL_SIZE + 2):
        response = _remember(client, "after the drop", "after")
        if "result" in response:
            outcomes.append("ok")
            break
        data = assert_error(response, STORAGE_BUSY)
        assert data["retryable"] is True
        outcomes.append("busy")
    assert outcomes[-1] == "ok", outcomes
    assert "busy" in outcomes  # the drop was seen, not slept through
    found = client.result("memory.search", {"scope": "proj", "query": "drop", "mode": "lexical"})
    assert [hit["content"] for hit in found["results"]] == ["after the drop"]
    assert _contents(pg_url) == [f"before {n}" for n in range(POOL_SIZE)] + ["after the drop"]


def test_a_statement_over_the_timeout_is_retryable_and_the_next_one_runs(
    start: Start, pg_url: str
) -> None:
    """Another session holds the memories table locked: a search waits past
    `db_statement_timeout_ms` and gets storage_busy (retryable), a write likewise and stores
    nothing; once the lock is gone both succeed."""
    client = start(pg_url, env={"MEMPROC_DB_STATEMENT_TIMEOUT_MS": "300"})
    assert "result" in _remember(client, "stored first", "first")
    search = {"scope": "proj", "query": "stored", "mode": "lexical"}
    with psycopg.connect(pg_url) as blocker:
        blocker.execute("LOCK TABLE memories IN ACCESS EXCLUSIVE MODE")
        for response in (client.call("memory.search", search), _remember(client, "x", "second")):
            data = assert_error(response, STORAGE_BUSY)
            assert data["retryable"] is True
        blocker.rollback()
    assert [h["content"] for h in client.result("memory.search", search)["results"]] == [
        "stored first"
    ]
    assert "result" in _remember(client, "stored second", "second")
    assert _contents(pg_url) == ["stored first", "stored second"]


def test_a_database_from_newer_code_is_refused_and_left_alone(start: Start, pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        (version,) = conn.execute("SELECT version FROM memproc_schema").fetchone() or (0,)
        conn.execute("UPDATE memproc_schema SET version = %s", (version + 1,))
    client = start(pg_url)
    data = assert_error(_remember(client, "a note", "t"), STORAGE_UNAVAILABLE)
    assert data["reason"] == "schema_too_new"
    assert data["schema_version"] == version + 1
    client.ping()
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT version FROM memproc_schema").fetchone() == (version + 1,)
        assert conn.execute("SELECT count(*) FROM memories").fetchone() == (0,)
