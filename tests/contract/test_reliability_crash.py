"""Crash safety, CI-sized: kill -9 a real `memproc serve` mid-write, restart it on the same file
(or the same PostgreSQL database), and find every acknowledged write whole, nothing
half-applied, and the store intact; on PostgreSQL, also the write lock free after every kill.

The driver and its checks are in tests/stress/ (stress_crash.py, crash_checks.py); its long mode
runs more trials and prints the figures benchmarks/RELIABILITY.md reports.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pg_target
import pytest
import stress_crash
from client import Client, Spawn, clean_env
from crash_checks import Tally, verify_after_restart
from crash_workload import SCOPE, Ledger, Write
from stress_crash import MUST_BE_ZERO, Sizes

from memproc.store.postgres.database import PgStore

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

WRITE_METHODS = {
    "memory.remember",
    "memory.edit",
    "memory.supersede",
    "evidence.put",
    "checkpoint.save",
}


def check_figures(figures: dict[str, Any], trials: int, methods: set[str]) -> None:
    assert figures["problems"] == []
    assert {name: figures[name] for name in MUST_BE_ZERO} == dict.fromkeys(MUST_BE_ZERO, 0)
    assert figures["kills"] == trials
    # The run really exercised what it claims: writes of these kinds were acknowledged,
    # replayed and found again, and kills landed with writes in flight.
    assert methods <= set(figures["acknowledged_by_method"])
    assert figures["replays"] > 0
    assert figures["records_checked"] >= figures["acknowledged_writes"] > 0
    assert figures["kills_with_writes_in_flight"] > 0
    assert figures["unacknowledged_in_flight"] == (
        figures["unacknowledged_present"] + figures["unacknowledged_absent"]
    )


def record(figures: dict[str, Any], record_property: Callable[[str, object], None]) -> None:
    for name, value in figures.items():
        if isinstance(value, int | float | str):
            record_property(name, value)


def test_kill_9_loses_no_acknowledged_write(
    tmp_path: Path, db_path: Path | str, record_property: Callable[[str, object], None]
) -> None:
    trials = 20
    sizes = Sizes(max_delay_s=0.4, big_burst=100)
    figures = stress_crash.run(
        trials=trials, seed=6, sizes=sizes, directory=tmp_path, database=db_path
    )
    record(figures, record_property)
    check_figures(figures, trials, WRITE_METHODS)
    if isinstance(db_path, str):  # PostgreSQL: the lock was checked after every kill
        assert figures["write_lock_checks"] == trials


def test_kill_9_with_vectors_leaves_no_drift(
    tmp_path: Path,
    db_path: Path | str,
    minilm_dir: Path,
    record_property: Callable[[str, object], None],
) -> None:
    """With an embedder, writes store vectors in their transactions and restarts run a
    backfill: a kill must leave no vector without its memory and no half set of chunks, and
    a server left alone at the end brings every vector up to date."""
    trials = 3
    sizes = Sizes(max_delay_s=0.5, max_burst=6, big_burst=24)
    # Seed 4's first trial waits for the model, then sends three bursts and waits for all their
    # answers before the big burst and the kill: some writes are always stored with vectors.
    figures = stress_crash.run(
        trials=trials,
        seed=4,
        sizes=sizes,
        models_dir=minilm_dir.parent,
        directory=tmp_path,
        database=db_path,
    )
    record(figures, record_property)
    assert figures["embedder"] == minilm_dir.name
    assert figures["memories_with_vectors"] > 0
    assert figures["vectors_pending_at_end"] == 0
    check_figures(figures, trials, {"memory.remember"})


def _remember(client: Client, ledger: Ledger, number: int) -> tuple[Write, dict[str, Any]]:
    """One acknowledged remember, written as the workload writes it, taken into the ledger."""
    params = {
        "scope": SCOPE,
        "kind": "fact",
        "content": f"mark{number:07d} remembered: a fact the checks look for",
        "tags": ["t1"],
        "client_token": f"tok-{number}",
    }
    write = Write("memory.remember", params, params["client_token"])
    result = client.call("memory.remember", params)["result"]
    assert ledger.acknowledge(write, result) is None
    return write, result


def test_the_checks_find_a_lost_and_a_doubled_write(spawn: Spawn) -> None:
    """The suite can fail: on a sound store its checks find nothing; once one acknowledged
    memory is gone and another's content is stored twice, they count the lost write and the
    copy that no write explains."""
    client = spawn()
    ledger = Ledger()
    acknowledged = [_remember(client, ledger, number) for number in (1, 2)]
    sound = Tally()
    verify_after_restart(client, ledger, [], acknowledged, sound)
    assert (sound.lost, sound.half_applied, sound.replay_mismatches, sound.errors) == (0, 0, 0, 0)
    assert sound.checked == 2

    (_, lost), (doubled, _) = acknowledged
    purge = {"scope": SCOPE, "id": lost["id"], "reason": "the check must notice"}
    assert "result" in client.call("memory.purge", purge)
    again = {**doubled.params, "client_token": "another-token", "kind": "note"}
    assert client.call("memory.remember", again)["result"]["created"] is True

    broken = Tally()
    verify_after_restart(client, ledger, [], [], broken)
    assert broken.lost == 1, broken.problems
    assert f"lost: memory {lost['id']}" in "\n".join(broken.problems)
    # The second copy matches no write; the purged memory is also not found by search.
    doubles = [p for p in broken.problems if "matches no write" in p and "mark0000002" in p]
    assert len(doubles) == 1 and broken.half_applied == 2, broken.problems


# -- PostgreSQL: the write lock after a kill -----------------------------------------------------

HOLD_THE_LOCK = """
import sys, time
from memproc.store.postgres.database import PgStore
store = PgStore(sys.argv[1])
with store.writing():
    print("held", flush=True)
    time.sleep(600)
"""


def test_a_write_lock_still_held_is_a_finding(pg_url: str) -> None:
    """The lock check can fail: while a writer holds the lock, a new one cannot get it."""
    holder = PgStore(pg_url)
    try:
        with holder.writing():
            assert pg_target.write_lock_wait(pg_url, timeout_ms=200) is None
    finally:
        holder.close()
    waited = pg_target.write_lock_wait(pg_url, timeout_ms=200)
    assert waited is not None


def test_kill_9_of_a_writer_holding_the_lock_frees_it(pg_url: str) -> None:
    """A process killed inside its write transaction leaves no lock behind: the server aborts
    the transaction when it finds the connection closed, and the transaction-level lock goes
    with it, so the next writer does not wait for the lock timeout."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_THE_LOCK, pg_url], stdout=subprocess.PIPE, env=clean_env()
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        assert pg_target.write_lock_wait(pg_url, timeout_ms=200) is None  # it really holds it
        holder.kill()
        holder.wait(10)
        waited = pg_target.write_lock_wait(pg_url, timeout_ms=5_000)
        assert waited is not None and waited < 1.0
    finally:
        holder.kill()
        holder.wait(10)
        assert holder.stdout is not None
        holder.stdout.close()
