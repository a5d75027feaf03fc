"""The test PostgreSQL server is real and does what the store on Postgres will ask of it:
pgvector's HNSW cosine search, full-text search with a GIN index, statement timeouts, and the
failures of concurrent transactions (serialization failures and deadlocks: the SQLSTATEs that
the store will map to retryable errors). Also: the server runs unprivileged, it is gone after
teardown, a failed body included, and a server that cannot start says why."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator

import numpy as np
import psycopg
import pytest
from psycopg import errors

import pgkit
from pgkit import PgServer, PgServerError, running_server

DIMENSIONS = 384


@pytest.fixture
def schema_options(pg_server: PgServer) -> Iterator[str]:
    """Connection options that put a test in a schema of its own, dropped afterwards, so that
    tests sharing the session's server do not see each other's tables."""
    schema = f"test_{uuid.uuid4().hex}"
    with psycopg.connect(pg_server.url, autocommit=True) as admin:
        admin.execute(f"CREATE SCHEMA {schema}")
        try:
            yield f"-c search_path={schema},public"
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture
def conn(pg_server: PgServer, schema_options: str) -> Iterator[psycopg.Connection]:
    with psycopg.connect(pg_server.url, options=schema_options) as connection:
        yield connection


def vector_literal(values: np.ndarray) -> str:
    return "[" + ",".join(f"{v:.7f}" for v in values) + "]"


def plan(conn: psycopg.Connection, query: str, params: tuple[object, ...]) -> str:
    rows = conn.execute(f"EXPLAIN {query}", params).fetchall()
    return "\n".join(row[0] for row in rows)


def test_server_is_postgres_16_with_pgvector(conn: psycopg.Connection) -> None:
    assert conn.info.server_version // 10000 == 16
    version = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
    assert version.fetchone() == (pgkit.PGVECTOR_VERSION,)


def test_hnsw_cosine_search_finds_the_nearest_vectors(conn: psycopg.Connection) -> None:
    rng = np.random.default_rng(17)
    vectors = rng.standard_normal((60, DIMENSIONS)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    conn.execute(f"CREATE TABLE items (id int PRIMARY KEY, embedding vector({DIMENSIONS}))")
    conn.execute("CREATE INDEX items_hnsw ON items USING hnsw (embedding vector_cosine_ops)")
    with conn.cursor() as cursor:
        cursor.executemany(
            "INSERT INTO items VALUES (%s, %s::vector)",
            [(i, vector_literal(v)) for i, v in enumerate(vectors)],
        )
    query = vectors[7] + 0.3 * rng.standard_normal(DIMENSIONS).astype(np.float32)
    # The planner takes the index, not a scan; ef_search above the row count makes the walk
    # visit every node, so the answer is exact and the test cannot flake on HNSW's randomness.
    conn.execute("SET enable_seqscan = off")
    conn.execute("SET hnsw.ef_search = 100")
    nearest = "SELECT id, embedding <=> %s::vector AS d FROM items ORDER BY d LIMIT 5"
    assert "Index Scan using items_hnsw" in plan(conn, nearest, (vector_literal(query),))
    found = conn.execute(nearest, (vector_literal(query),)).fetchall()

    cosine_distance = 1 - vectors @ query / np.linalg.norm(query)
    expected = np.argsort(cosine_distance)[:5]
    assert [row[0] for row in found] == expected.tolist()
    assert found[0][0] == 7
    assert [row[1] for row in found] == pytest.approx(cosine_distance[expected], abs=1e-5)


def test_websearch_query_over_a_gin_indexed_tsvector(conn: psycopg.Connection) -> None:
    conn.execute(
        "CREATE TABLE docs (id int PRIMARY KEY, body text NOT NULL, body_tsv tsvector"
        " GENERATED ALWAYS AS (to_tsvector('english', body)) STORED)"
    )
    conn.execute("CREATE INDEX docs_fts ON docs USING gin (body_tsv)")
    bodies = {
        1: "The connection pool was exhausted during the nightly batch.",
        2: "Connection pools are sized from the worker count.",
        3: "The pool of connections timed out after a statement timeout.",
        4: "Alice prefers tabs over spaces.",
    }
    with conn.cursor() as cursor:
        cursor.executemany("INSERT INTO docs VALUES (%s, %s)", list(bodies.items()))
    conn.execute("SET enable_seqscan = off")
    search = "SELECT id FROM docs WHERE body_tsv @@ websearch_to_tsquery('english', %s) ORDER BY id"

    assert "docs_fts" in plan(conn, search, ("pool",))
    # stemming: "pools" and "pool" are one word
    assert [r[0] for r in conn.execute(search, ("pools",))] == [1, 2, 3]
    # a quoted phrase needs the words adjacent and in order
    assert [r[0] for r in conn.execute(search, ('"connection pool"',))] == [1, 2]
    # a leading minus excludes
    assert [r[0] for r in conn.execute(search, ("pool -timeout",))] == [1, 2]
    assert [r[0] for r in conn.execute(search, ("tabs or batch",))] == [1, 4]


def test_statement_timeout_cancels_with_query_canceled(conn: psycopg.Connection) -> None:
    conn.execute("SET statement_timeout = '50ms'")
    with pytest.raises(errors.QueryCanceled) as raised:
        conn.execute("SELECT pg_sleep(5)")
    assert raised.value.sqlstate == "57014"
    assert "statement timeout" in str(raised.value)
    conn.rollback()
    assert conn.execute("SELECT 1").fetchone() == (1,)


def test_write_skew_between_serializable_transactions_fails_one(
    pg_server: PgServer, schema_options: str, conn: psycopg.Connection
) -> None:
    """Two transactions each read both rows and then change a different one: either alone is
    fine, together they could not have run one after the other, so SERIALIZABLE fails the
    second to commit with SQLSTATE 40001, the one a store retries."""
    conn.execute("CREATE TABLE on_call (doctor text PRIMARY KEY, on_duty bool NOT NULL)")
    conn.execute("INSERT INTO on_call VALUES ('alice', true), ('bob', true)")
    conn.commit()
    first = psycopg.connect(pg_server.url, options=schema_options)
    second = psycopg.connect(pg_server.url, options=schema_options)
    with first, second:
        for c in (first, second):
            c.isolation_level = psycopg.IsolationLevel.SERIALIZABLE
            on_duty = c.execute("SELECT count(*) FROM on_call WHERE on_duty").fetchone()
            assert on_duty == (2,)
        first.execute("UPDATE on_call SET on_duty = false WHERE doctor = 'alice'")
        second.execute("UPDATE on_call SET on_duty = false WHERE doctor = 'bob'")
        first.commit()
        with pytest.raises(errors.SerializationFailure) as raised:
            second.commit()
        assert raised.value.sqlstate == "40001"

    rows = conn.execute("SELECT doctor FROM on_call WHERE on_duty ORDER BY doctor").fetchall()
    assert rows == [("bob",)]


def test_a_lock_cycle_fails_one_transaction_as_a_deadlock(
    pg_server: PgServer, schema_options: str, conn: psycopg.Connection
) -> None:
    """Each transaction holds one row and then asks for the other's: whichever order they
    block in, the cycle forms, the server breaks it by failing one with SQLSTATE 40P01 (the
    other code a store retries), and the other goes on to commit."""
    conn.execute("CREATE TABLE counters (name text PRIMARY KEY, n int NOT NULL)")
    conn.execute("INSERT INTO counters VALUES ('a', 0), ('b', 0)")
    conn.commit()
    # a short deadlock check, and a statement timeout so that a bug cannot hang the test
    options = f"{schema_options} -c deadlock_timeout=100ms -c statement_timeout=30s"
    outcomes: dict[str, str] = {}

    def take(name: str, c: psycopg.Connection, row: str) -> None:
        try:
            c.execute("UPDATE counters SET n = n + 1 WHERE name = %s", (row,))
            c.commit()
            outcomes[name] = "committed"
        except errors.DeadlockDetected as failure:
            outcomes[name] = failure.sqlstate or ""
            c.rollback()

    first = psycopg.connect(pg_server.url, options=options)
    second = psycopg.connect(pg_server.url, options=options)
    with first, second:
        first.execute("UPDATE counters SET n = n + 1 WHERE name = 'a'")
        second.execute("UPDATE counters SET n = n + 1 WHERE name = 'b'")
        crossing = threading.Thread(target=take, args=("first", first, "b"))
        crossing.start()
        take("second", second, "a")
        crossing.join(60)
        assert not crossing.is_alive()

    assert sorted(outcomes.values()) == ["40P01", "committed"]
    counts = dict(conn.execute("SELECT name, n FROM counters").fetchall())
    assert counts == {"a": 1, "b": 1}


def test_the_server_runs_unprivileged(pg_server: PgServer) -> None:
    owner = os.stat(f"/proc/{pg_server.pid}").st_uid
    assert owner != 0
    if os.geteuid() != 0:
        assert owner == os.geteuid()


def test_teardown_stops_the_server_and_removes_its_directory_after_a_failure() -> None:
    with pytest.raises(ZeroDivisionError), running_server() as server:
        with psycopg.connect(server.url) as c:
            assert c.execute("SELECT 1").fetchone() == (1,)
        _ = 1 / 0

    assert not server.socket_dir.exists()
    with pytest.raises(ProcessLookupError):
        os.kill(server.pid, 0)
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(server.url, connect_timeout=2)


def test_a_server_that_cannot_start_says_why() -> None:
    with pytest.raises(PgServerError) as raised, running_server({"no_such_setting": "1"}):
        pytest.fail("the server started with an unknown setting")
    assert 'unrecognized configuration parameter "no_such_setting"' in str(raised.value)
