"""A changed value that moves across one the dependent states, on workflows written for this
test: a museum's loan register and the procedures that read it."""

from __future__ import annotations

from dataclasses import replace

import pytest

from gatekit import proc, verdict
from memproc.gate import Step, assess
from memproc.gate.crossings import quantities

OLD = proc(
    "a",
    "keep the loan register",
    ["loan register"],
    [
        ("Intake", "scan the loan agreement into the loan register"),
        ("Acclimatise", "crates rest unopened for 24 hours before unpacking"),
        ("Lock", "the loan register locks for edits at 18:00"),
        ("Audit", "the registrar audits the register every Monday"),
    ],
)


def _revised(step: int, detail: str) -> object:
    steps = list(OLD.steps)
    steps[step] = Step(steps[step].action, detail)
    return replace(OLD, steps=tuple(steps))


def _reader(detail: str) -> object:
    return proc("b", "insurance claim file", ["loan register"], [("Photos", detail)])


@pytest.mark.parametrize(
    ("text", "dimension", "amount"),
    [
        ("keeps photos for 60 days", "time", 60 * 86400.0),
        ("locks at 18:00", "time of day", 1080.0),
        ("closes at 6 pm", "time of day", 1080.0),
        ("every Monday", "day of the week", 0.0),
        ("a 2 GB share", "size", 2e9),
        ("purge_after_days: 10", "time", 10 * 86400.0),  # the unit in the key's name
        ("--cache-hours 6 on the mirror", "time", 6 * 3600.0),
        ("humidity held at 62%", "percentage", 62.0),
    ],
)
def test_the_values_read_with_their_dimension(text: str, dimension: str, amount: float) -> None:
    assert (dimension, amount) in [(v.dimension, v.amount) for v in quantities(text)]


def test_bare_counts_have_no_dimension() -> None:
    assert quantities("3 copies to 5 couriers") == []
    assert quantities("min_copies: 3") == []  # a minimum, not minutes


@pytest.mark.parametrize(
    ("step", "detail", "reader", "crossed"),
    [
        # moved below what the dependent states: between the two values
        (
            1,
            "crates rest unopened for 6 hours before unpacking",
            "photograph contents 12 hours after delivery",
            True,
        ),
        # moved above it: the relation the dependent was written against turns round
        (
            1,
            "crates rest unopened for 48 hours before unpacking",
            "photograph contents 36 hours after delivery",
            True,
        ),
        # the dependent states the old value itself
        (
            1,
            "crates rest unopened for 12 hours before unpacking",
            "photograph contents 24 hours after delivery",
            True,
        ),
        # on the same side before and after
        (
            1,
            "crates rest unopened for 30 hours before unpacking",
            "photograph contents 2 hours after delivery",
            False,
        ),
        # a time of day moved past the dependent's
        (2, "the loan register locks for edits at 16:00", "attach photos at 17:00", True),
        (2, "the loan register locks for edits at 20:00", "attach photos at 17:00", False),
        # a day of the week moved onto the dependent's
        (3, "the registrar audits the register every Thursday", "files claims on Thursdays", True),
        (3, "the registrar audits the register every Friday", "files claims on Thursdays", False),
        # the same value in another unit is no change
        (
            1,
            "crates rest unopened for 1440 minutes before unpacking",
            "photograph contents 12 hours after delivery",
            False,
        ),
    ],
)
def test_a_value_moved_across_the_dependents_is_a_finding(
    step: int, detail: str, reader: str, crossed: bool
) -> None:
    new = _revised(step, detail)
    assert verdict(OLD, new, _reader(reader)) == (["changed_value"] if crossed else [])


def test_the_finding_names_both_values_and_the_dependents() -> None:
    new = _revised(1, "crates rest unopened for 6 hours before unpacking")
    result = assess(OLD, new, [_reader("photograph contents 12 hours after delivery")])
    (finding,) = result.findings
    assert finding.pattern == "changed_value"
    assert "24 hours" in finding.detail and "6 hours" in finding.detail
    assert "12 hours" in finding.detail and "between the two" in finding.detail
    assert finding.evidence == {"revision": "6 hours", "old": "24 hours", "dependent": "12 hours"}
    assert result.undecided == []


def test_a_value_of_another_dimension_is_not_compared() -> None:
    new = _revised(1, "crates rest unopened for 6 hours before unpacking")
    assert verdict(OLD, new, _reader("photos of at most 30 MB each")) == []


def test_a_limit_raised_past_the_dependents_value_is_not_asked() -> None:
    old = proc("a", "run the scan inbox", ["scan inbox"], [("Limits", "max upload 20 MB per file")])
    raised = replace(old, steps=(Step("Limits", "max upload 50 MB per file"),))
    sender = proc("b", "send scans", ["scan inbox"], [("Send", "upload 30 MB scans")])
    assert verdict(old, raised, sender) == []
    assert verdict(raised, old, sender) == ["tightened_limit"]  # lowered: a finding of its own
