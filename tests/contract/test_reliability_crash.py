"""Crash safety, CI-sized: kill -9 a real `memproc serve` mid-write, restart it on the same file
(or the same PostgreSQL database), and find every acknowledged write whole, nothing
half-applied, and the store intact; on PostgreSQL, also the write lock free after every kill.

The driver and its checks are in tests/stress/ (stress_crash.py, crash_checks.py); its long mode
runs more trials and prints the figures benchmarks/RELIABILITY.md reports.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import stress_crash
from stress_crash import MUST_BE_ZERO, Sizes

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
