"""Shutdown, CI-sized: tests/stress/stress_shutdown.py with each scenario once and one orphan
trial per mode.

The exit times are compared with a generous ceiling (the deadline, a second's grace and
several seconds of slack), far below the 30 s a blocked handler would otherwise hold the
process: a bound on a wait, not a latency target.
"""

from __future__ import annotations

from typing import Any

import pytest
import stress_shutdown

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

CEILING_S = stress_shutdown.ORPHAN_BOUND_S


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return stress_shutdown.run(tmp_path_factory.mktemp("shutdown"), in_flight=50, orphan_trials=4)


@pytest.mark.parametrize("scenario", ["eof_held", "eof_pipelined"])
def test_eof_answers_all_50_in_flight_and_keeps_every_write(
    figures: dict[str, Any], scenario: str
) -> None:
    eof = figures[scenario]
    assert eof["sent"] == eof["answered_once"] == 50
    assert eof["exit_status"] == 0
    assert eof["errors_by_code"] == {}
    assert eof["missing_after_restart"] == 0


def test_eof_held_had_all_50_in_flight_at_eof(figures: dict[str, Any]) -> None:
    assert figures["eof_held"]["in_flight_at_eof"] == 50
    assert figures["eof_held"]["server_in_flight_at_eof"] == 50


@pytest.mark.parametrize("scenario", ["sigterm_cooperative", "sigterm_stubborn"])
def test_sigterm_answers_or_cancels_everything_and_exits_0(
    figures: dict[str, Any], scenario: str
) -> None:
    term = figures[scenario]
    assert term["sent"] == term["answered_once"]
    assert term["exit_status"] == 0
    assert set(term["errors_by_code"]) <= {"-32800"}
    assert term["missing_after_restart"] == 0
    assert term["cancelled_but_present"] == 0
    assert term["exit_s"] < CEILING_S


def test_a_killed_parent_leaves_no_orphan(figures: dict[str, Any]) -> None:
    orphans = figures["orphans"]
    assert orphans["trials"] == 4
    assert orphans["survivors"] == 0
    assert {trial["mode"] for trial in orphans["by_trial"]} == set(stress_shutdown.ORPHAN_MODES)
    assert all(trial["integrity"] == "ok" for trial in orphans["by_trial"])


def test_a_vanished_stdout_reader_ends_the_process(figures: dict[str, Any]) -> None:
    closed = figures["stdout_closed"]
    assert closed["exit_status"] == 0
    assert closed["exit_s"] < CEILING_S
