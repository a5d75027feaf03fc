"""Semantic search through the real process: `serve --models-dir` with MiniLM installed.

Models load in the background, so each test first waits for the state it needs (through
`server.info`, or the server's own wait inside a search); nothing here sleeps or asserts time.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import apsw
import psycopg
from client import SLOW_SERVER, Client, Spawn, assert_error

MODEL_TIMEOUT = 60.0  # a ceiling for loading and backfilling; neither normally takes a second
EMBEDDER = "minilm-l6-int8"
CORPUS = {
    "deploy": "The deploy pipeline pushes container images to the registry after tests pass.",
    "tabs": "Alice prefers tabs over spaces in Python files.",
    "postgres": "Postgres connection pool exhausted during the nightly batch job.",
    "cat": "The cat sleeps on the sofa.",
    "ruff": "Use ruff for linting and formatting.",
}
PARAPHRASE = "kitten napping couch"  # no word in common with any memory above


def with_models(spawn: Spawn, models_dir: Path) -> Client:
    return spawn("--models-dir", str(models_dir))


def remember_corpus(server: Client, scope: str = "s") -> dict[str, str]:
    items = [{"kind": "note", "content": text} for text in CORPUS.values()]
    result = server.result("memory.remember_batch", {"scope": scope, "items": items})
    assert [r["created"] for r in result["results"]] == [True] * len(CORPUS)
    return {name: r["id"] for name, r in zip(CORPUS, result["results"], strict=True)}


def search(server: Client, query: str, **params: Any) -> dict[str, Any]:
    params.setdefault("scope", "s")
    result: dict[str, Any] = server.result(
        "memory.search", {"query": query, **params}, timeout=MODEL_TIMEOUT
    )
    return result


def hit_ids(result: dict[str, Any]) -> list[str]:
    return [hit["id"] for hit in result["results"]]


def test_hybrid_search_after_remember_finds_by_meaning(spawn: Spawn, models_dir: Path) -> None:
    server = with_models(spawn, models_dir)
    embedder = server.wait_component("embedder", MODEL_TIMEOUT)
    assert embedder["state"] == "ready", embedder
    assert embedder["detail"]["name"] == EMBEDDER
    memories = remember_corpus(server)

    hybrid = search(server, PARAPHRASE, mode="hybrid")
    assert hybrid["mode"] == "hybrid" and hybrid.get("degraded") is None
    assert hit_ids(hybrid)[0] == memories["cat"]
    assert hybrid["results"][0]["ranks"] == {"dense": 1, "fused": 1}
    lexical = search(server, PARAPHRASE, mode="lexical")
    assert memories["cat"] not in hit_ids(lexical)
    both = search(server, "deploy pipeline registry", mode="hybrid", limit=1)
    assert both["results"][0]["ranks"] == {"lexical": 1, "dense": 1, "fused": 1}


def test_explain_travels_over_the_wire(spawn: Spawn, models_dir: Path) -> None:
    server = with_models(spawn, models_dir)
    server.wait_component("embedder", MODEL_TIMEOUT)
    remember_corpus(server)
    result = search(server, "deploy pipeline", limit=2, explain=True)
    explanation = result["explanation"]
    assert explanation["queries"]["embedder"] == EMBEDDER
    assert explanation["queries"]["dense"] == "deploy pipeline"
    outcomes = [c["outcome"] for c in explanation["candidates"]]
    assert outcomes.count("returned") == 2 == explanation["counts"]["returned"]
    assert len(outcomes) == explanation["counts"]["candidates"] == len(CORPUS)


def test_a_search_sent_right_after_spawn_is_answered(
    spawn: Spawn, models_dir: Path, db_path: Path
) -> None:
    """The first request needs the embedder while it is (maybe) still loading: the server
    waits for it rather than failing or degrading, and answers by meaning."""
    first = with_models(spawn, models_dir)
    first.wait_component("embedder", MODEL_TIMEOUT)
    memories = remember_corpus(first)
    assert first.finish() == 0

    second = with_models(spawn, models_dir)
    response = second.call(
        "memory.search", {"scope": "s", "query": PARAPHRASE, "mode": "hybrid"}, timeout=60
    )
    assert "result" in response, response
    assert response["result"]["mode"] == "hybrid"
    assert response["result"].get("degraded") is None
    assert hit_ids(response["result"])[0] == memories["cat"]


def test_without_models_hybrid_degrades_and_dense_is_refused(spawn: Spawn) -> None:
    server = spawn()  # the client helper gives it an empty models directory
    memories = remember_corpus(server)
    hybrid = search(server, "deploy pipeline")
    assert hybrid["mode"] == "lexical"
    assert "lexical" in hybrid["degraded"]
    assert hit_ids(hybrid)[0] == memories["deploy"]
    dense = server.call("memory.search", {"scope": "s", "query": "deploy", "mode": "dense"})
    data = assert_error(dense, -32001)
    assert data["retryable"] is False


def test_remember_batch_and_feedback_round_trip(spawn: Spawn, models_dir: Path) -> None:
    server = with_models(spawn, models_dir)
    server.wait_component("embedder", MODEL_TIMEOUT)
    items = [
        {"kind": "fact", "content": "The VPN gateway is vpn.example.net."},
        {"kind": "fact", "content": "Builds run on four CI runners.", "client_token": "t-1"},
        {"kind": "fact", "content": "The VPN gateway is vpn.example.net."},
    ]
    result = server.result("memory.remember_batch", {"scope": "s", "items": items})
    (a, b, again) = result["results"]
    assert (a["created"], b["created"], again["created"]) == (True, True, False)
    assert again["id"] == a["id"]
    replay = server.result(
        "memory.remember_batch",
        {"scope": "s", "items": [{"kind": "fact", "content": "changed", "client_token": "t-1"}]},
    )
    assert replay["results"] == [{"id": b["id"], "created": False}]

    found = search(server, "how many machines run the builds", mode="dense", limit=1)
    assert hit_ids(found) == [b["id"]]
    feedback = {"scope": "s", "id": b["id"], "used": True}
    assert server.result("memory.feedback", feedback) == {"recorded": True}
    unused = {"scope": "s", "id": a["id"], "used": False}
    assert server.result("memory.feedback", unused) == {"recorded": True}
    missing = server.call("memory.feedback", {"scope": "s", "id": "no-such-id", "used": True})
    assert_error(missing, -32002)
    bad = server.call("memory.feedback", {"scope": "s", "id": a["id"]})
    assert_error(bad, -32602)


# -- backfill progress -------------------------------------------------------------------------


def notifications(server: Client) -> list[dict[str, Any]]:
    """Messages the server sent unprompted (no id): here, progress notifications."""
    messages = [json.loads(line) for line in list(server.lines)]
    return [m for m in messages if isinstance(m, dict) and "method" in m and "id" not in m]


def wait_for_progress_done(server: Client) -> list[dict[str, Any]]:
    """Ping until a progress notification with done == total has arrived; every one seen.
    Each ping is a round trip through the reader, so all lines written before it are in."""
    deadline = time.monotonic() + MODEL_TIMEOUT
    while True:
        server.ping()
        progress = [n for n in notifications(server) if n["method"] == "notifications/progress"]
        if progress and progress[-1]["params"]["done"] == progress[-1]["params"]["total"]:
            return progress
        assert time.monotonic() < deadline, f"no finished backfill; saw {progress}"


def drop_notifications(server: Client) -> None:
    """The fixture's stream check expects only responses; the notifications have been checked
    here, so leave it the rest (call after the process has exited)."""
    kept = [line for line in server.lines if "id" in json.loads(line)]
    server.lines[:] = kept


def test_backfill_sends_progress_when_an_embedder_arrives(spawn: Spawn, models_dir: Path) -> None:
    count = 70  # more than one backfill batch (64)
    without = spawn()  # no models: memories are stored without vectors
    items = [{"kind": "note", "content": f"Routine log line number {i}."} for i in range(count)]
    without.result("memory.remember_batch", {"scope": "s", "items": items})
    cat = {"scope": "s", "kind": "note", "content": CORPUS["cat"]}
    cat_id = without.result("memory.remember", cat)["id"]
    assert without.finish() == 0
    assert notifications(without) == []

    server = with_models(spawn, models_dir)
    progress = wait_for_progress_done(server)
    for note in progress:
        assert note["jsonrpc"] == "2.0"
        assert note["params"]["task"] == "backfill"
        assert note["params"]["embedder"] == EMBEDDER
        assert note["params"]["total"] == count + 1
    done = [note["params"]["done"] for note in progress]
    assert done == sorted(done) and len(done) >= 2 and done[-1] == count + 1
    assert hit_ids(search(server, PARAPHRASE, mode="dense", limit=1)) == [cat_id]
    assert server.finish() == 0
    drop_notifications(server)


def test_vectors_of_answered_remembers_are_written_before_exit(
    spawn: Spawn, models_dir: Path, db_path: Path | str
) -> None:
    """A remember is answered before its vectors are computed; at the end of input the
    process finishes them before it exits, so another process finds the memories by meaning
    at once (without waiting for the next start's backfill). The shutdown deadline that
    bounds this wait is raised so a slow machine cannot cut it short."""
    server = spawn("--models-dir", str(models_dir), env={"MEMPROC_SHUTDOWN_DEADLINE_S": "120"})
    assert server.wait_component("embedder", MODEL_TIMEOUT)["state"] == "ready"
    answered = [
        server.result("memory.remember", {"scope": "s", "kind": "note", "content": text})
        for text in CORPUS.values()
    ]
    assert all(r["created"] for r in answered)
    assert server.finish() == 0
    assert count_embedded(db_path) == len(CORPUS)


def count_embedded(db: Path | str) -> int:
    """Memories with vectors, read from the store itself (either kind) by another process."""
    sql = (
        "SELECT count(DISTINCT e.memory_seq) FROM memory_embeddings AS e "
        "JOIN memories AS m ON m.seq = e.memory_seq"
    )
    if isinstance(db, str):
        with psycopg.connect(db) as server:
            row = server.execute(sql).fetchone()
            return int(row[0]) if row else 0
    connection = apsw.Connection(str(db))
    try:
        return int(connection.execute(sql).get or 0)
    finally:
        connection.close()


def test_a_remember_made_while_the_model_loads_is_found_by_meaning_at_once(
    spawn: Spawn, models_dir: Path
) -> None:
    """Written before the embedder is ready, the memory has no vectors; a search sent after it
    waits for them (the deferred worker waits for the model), rather than answering from the
    words alone with nothing said."""
    server = spawn(
        "--models-dir", str(models_dir), wrapper=SLOW_SERVER, env={"CONTRACT_HOLD_MODELS": "1"}
    )
    server.wait_started("models")
    params = {"scope": "s", "kind": "note", "content": CORPUS["cat"]}
    cat = server.result("memory.remember", params)["id"]
    embedder = server.result("server.info")["components"]["embedder"]
    assert embedder["state"] == "loading", embedder
    request = server.request("memory.search", {"scope": "s", "query": PARAPHRASE, "mode": "dense"})
    server.release("models")
    response = server.wait_for(request, MODEL_TIMEOUT)
    assert "result" in response, response
    assert response["result"].get("degraded") is None
    assert hit_ids(response["result"]) == [cat]
