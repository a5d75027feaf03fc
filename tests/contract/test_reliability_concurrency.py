"""Concurrency, CI-sized: four `memproc serve` processes on one database (an SQLite file, or a
fresh PostgreSQL database), writing and searching at once; every write present once, no error
but a retried storage_busy. All four write to one scope at the same moments, so on PostgreSQL
what keeps them apart is the store's advisory write lock.

The driver is tests/stress/stress_concurrency.py; its long mode runs 4 x 1,000 writes and prints
the figures benchmarks/RELIABILITY.md reports. The two-process test in
test_contract_concurrency.py stays as the small, direct case.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import stress_concurrency
from client import Spawn
from stress_concurrency import (
    MUST_BE_ZERO,
    SCOPE,
    Listing,
    Outcome,
    Sizes,
    compare_listing,
    expected_memories,
    remember,
)

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow


def check_figures(figures: dict[str, Any], sizes: Sizes) -> None:
    assert figures["problems"] == []
    assert {name: figures[name] for name in MUST_BE_ZERO} == dict.fromkeys(MUST_BE_ZERO, 0)
    own = sizes.processes * sizes.writes
    assert figures["own_writes_acknowledged"] == own
    assert figures["memories_expected"] == figures["memories_present"] == own + sizes.shared
    assert figures["shared_attempts"] == sizes.processes * sizes.shared
    assert figures["replays"] == sizes.processes * (sizes.writes // sizes.replay_every)
    assert figures["searches"] == sizes.processes * -(-sizes.writes // sizes.search_every)


def record(figures: dict[str, Any], record_property: Callable[[str, object], None]) -> None:
    for name, value in figures.items():
        if isinstance(value, int | float | str):
            record_property(name, value)


def test_four_processes_on_one_file_lose_and_duplicate_nothing(
    tmp_path: Path, db_path: Path | str, record_property: Callable[[str, object], None]
) -> None:
    sizes = Sizes(processes=4, writes=100, shared=10)
    figures = stress_concurrency.run(sizes=sizes, seed=4, directory=tmp_path, database=db_path)
    record(figures, record_property)
    check_figures(figures, sizes)


def test_storage_busy_is_retried_until_every_write_lands(
    tmp_path: Path, db_path: Path | str, record_property: Callable[[str, object], None]
) -> None:
    """A 1 ms busy timeout makes the processes refuse each other's lock (on PostgreSQL, a 1 ms
    wait for the advisory write lock): the writes come back -32000, retryable, and the same
    request sent again lands once, without duplicates."""
    sizes = Sizes(processes=4, writes=50, shared=10)
    figures = stress_concurrency.run(
        sizes=sizes, seed=5, busy_timeout_ms=1, directory=tmp_path, database=db_path
    )
    record(figures, record_property)
    check_figures(figures, sizes)
    assert figures["busy_retries"] > 0


def test_the_checks_find_a_lost_and_an_unexpected_memory(spawn: Spawn) -> None:
    """The suite can fail: a listing of exactly the answered writes passes; once one of them
    is gone and a memory no answer named is there, the listing counts one missing and one
    extra (which the figures report as lost and duplicates)."""
    client = spawn()
    outcome = Outcome()
    for number in (1, 2):
        op = remember(f"process 0 write {number}: alpha", f"p0-{number}", "own")
        outcome.answers.append((op, client.call(op.method, op.params)["result"]))
    expected = expected_memories([outcome])
    assert compare_listing(client, expected) == Listing(present=2)

    gone = outcome.answers[0][1]["id"]
    purge = {"scope": SCOPE, "id": gone, "reason": "the check must notice"}
    assert "result" in client.call("memory.purge", purge)
    stray = client.call("memory.remember", remember("not planned", None, "own").params)
    listing = compare_listing(client, expected)
    assert listing.present == 1
    assert listing.missing == [f"{client.name}: {gone} missing or changed"]
    assert listing.extra == [f"{client.name}: unexpected {stray['result']['id']}"]
