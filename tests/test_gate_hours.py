"""Hours narrowed, on workflows written for this test: a print shop's opening hours and the
courier that collects from it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekit import proc, verdict
from memproc.gate import Step
from memproc.gate.hours import spans


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("counter open 08:30-19:30 on weekdays", [(510, 1170)]),
        ("staffed 24/7", [(0, 1440)]),
        ("night desk 21:30 to 05:30", [(1290, 330)]),
        ("no hours given", []),
    ],
)
def test_the_spans_of_the_day_a_text_keeps_open(text: str, found: list[tuple[int, int]]) -> None:
    assert spans(text) == found


OLD = proc(
    "a",
    "run the print shop",
    ["print shop"],
    [("Counter", "print counter open 08:15-20:15"), ("Plates", "make plates")],
)
NEW = replace(OLD, steps=(Step("Counter", "print counter open 08:15-17:15"), OLD.steps[1]))


@pytest.mark.parametrize(
    ("pickup", "found"),
    [
        ("collect proofs at the print counter at 18:30", ["tightened_limit"]),
        ("collect proofs at the print counter at 10:00", []),
        # not the counter, so no lost hours; its hour still lies between the old and the new
        # closing time, which `crossings` reads as a changed value
        ("collect proofs from the depot at 18:30", ["changed_value"]),
    ],
)
def test_a_dependent_that_acts_in_the_hours_lost_breaks(pickup: str, found: list[str]) -> None:
    courier = proc("b", "courier round", ["print shop"], [("Pickup", pickup)])
    assert verdict(OLD, NEW, courier) == found


def test_a_role_whose_hours_narrowed_among_others_kept_open() -> None:
    old = proc("a", "run the stores", ["stores"], [("Access", "24/7 for all staff")])
    new = replace(old, steps=(Step("Access", "supervisors 24/7; apprentices 06:45-18:45"),))
    fetch = ("Fetch", "the apprentice fetches parts at 23:00")
    night = proc("b", "night repairs", ["stores"], [fetch])
    assert verdict(old, new, night) == ["tightened_limit"]
