"""Load, CI-sized: tests/stress/stress_load.py with a small store and a short stream.

The invariants are asserted here; the latency figures are only recorded (as test properties):
timing belongs to the long mode, which prints them for benchmarks/RELIABILITY.md.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import stress_load

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

MEMORIES = 64  # one backfill batch
REQUESTS = 128
IN_FLIGHT = 64
SMALL_BOUND = 16


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path) -> dict[str, Any]:
    workdir = tmp_path_factory.mktemp("load")
    models = workdir / "models"
    models.mkdir()
    (models / minilm_dir.name).symlink_to(minilm_dir, target_is_directory=True)
    return stress_load.run(
        workdir,
        models_dir=models,
        memories=MEMORIES,
        requests=REQUESTS,
        in_flight=IN_FLIGHT,
        small_bound=SMALL_BOUND,
        live_requests=96,
    )


def test_the_backfill_embeds_every_memory_while_ping_answers(
    figures: dict[str, Any], record_property: Callable[[str, object], None]
) -> None:
    assert figures["backfill"]["embedded"] == MEMORIES
    ping = figures["ping"]
    assert ping["startup"]["count"] + ping["backfill"]["count"] > 0
    record_property("ping_backfill", ping["backfill"])


def test_64_in_flight_are_all_answered_once_without_errors(
    figures: dict[str, Any], record_property: Callable[[str, object], None]
) -> None:
    load = figures["load"]
    assert load["requests"] == load["answered_once"] == REQUESTS
    assert load["max_pending"] == load["in_flight"] == IN_FLIGHT
    assert load["errors_by_code"] == {}  # in particular no -32011 at the queue bound
    assert set(load["by_method"]) >= {"memory.search", "memory.remember", "context.get"}
    assert load["writes_missing"] == 0
    assert figures["ping"]["load"]["count"] > 0
    record_property("ping_load", figures["ping"]["load"])


def test_a_held_burst_is_refused_exactly_beyond_the_bound(figures: dict[str, Any]) -> None:
    at_bound, small = figures["bounds"][:2]
    assert (at_bound["max_pending"], at_bound["sent"], at_bound["overloaded"]) == (64, 64, 0)
    assert (small["max_pending"], small["sent"]) == (SMALL_BOUND, IN_FLIGHT)
    assert small["overloaded"] == IN_FLIGHT - SMALL_BOUND
    assert small["refused_were_the_last"] is True
    assert at_bound["other_errors"] == small["other_errors"] == 0


def test_live_refusals_only_happen_beyond_the_bound_and_retries_are_served(
    figures: dict[str, Any],
) -> None:
    live = figures["bounds"][2]
    assert live["in_flight"] > live["max_pending"]
    assert live["refused_below_bound"] == 0
    assert live["served"] == live["requests"]
