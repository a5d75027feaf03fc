"""The state machine in `memproc.lifecycle`: every (action, state) pair, legal or not.

The expected table below is written out by hand, independently of the module's own table, so
a changed rule shows up here as a failing pair rather than passing by construction.
"""

from __future__ import annotations

import itertools

import pytest

from memproc.errors import Conflict
from memproc.lifecycle import (
    ACTIONS,
    HIDDEN,
    SERVED,
    STATES,
    impacts_citers,
    is_repeat,
    next_state,
)

# action -> {state it may start from: state it leads to}; every other state is a conflict.
EXPECTED = {
    "challenge": {"active": "challenged"},
    "uphold": {"challenged": "active"},
    "reject": {"challenged": "invalidated"},
    "supersede": {"active": "superseded", "challenged": "superseded"},
    "invalidate": {"active": "invalidated", "challenged": "invalidated"},
    "forget": {
        "active": "forgotten",
        "challenged": "forgotten",
        "superseded": "forgotten",
        "invalidated": "forgotten",
    },
    "purge": {
        "active": "purged",
        "challenged": "purged",
        "superseded": "purged",
        "invalidated": "purged",
        "forgotten": "purged",
    },
    "edit": {"active": "active", "challenged": "challenged"},
}
PAIRS = list(itertools.product(ACTIONS, STATES))


def test_the_expected_table_covers_every_action() -> None:
    assert set(EXPECTED) == set(ACTIONS)
    assert len(STATES) == 6 and len(PAIRS) == 48


@pytest.mark.parametrize(
    ("action", "state"), [p for p in PAIRS if p[1] in EXPECTED[p[0]]], ids="-".join
)
def test_legal_transition(action: str, state: str) -> None:
    assert next_state(action, state) == EXPECTED[action][state]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action", "state"), [p for p in PAIRS if p[1] not in EXPECTED[p[0]]], ids="-".join
)
def test_illegal_transition_is_a_conflict_naming_the_current_state(action: str, state: str) -> None:
    with pytest.raises(Conflict) as caught:
        next_state(action, state)  # type: ignore[arg-type]
    assert caught.value.data == {"state": state}
    assert caught.value.code == -32003


def test_an_unknown_state_is_a_conflict_too() -> None:
    with pytest.raises(Conflict):
        next_state("challenge", "archived")


def test_only_forget_and_purge_repeat_idempotently() -> None:
    repeats = {(a, s) for a, s in PAIRS if is_repeat(a, s)}
    assert repeats == {("forget", "forgotten"), ("purge", "purged")}


def test_served_and_hidden_states() -> None:
    assert {"active", "challenged"} == SERVED
    assert {"forgotten", "purged"} == HIDDEN


@pytest.mark.parametrize(
    ("before", "after", "told"),
    [
        ("active", "challenged", True),
        ("active", "superseded", True),
        ("active", "invalidated", True),
        ("active", "forgotten", True),
        ("active", "purged", True),
        ("challenged", "active", False),  # upheld: nothing to tell
        ("challenged", "invalidated", True),
        ("challenged", "superseded", True),
        ("superseded", "forgotten", True),
        ("active", "active", False),  # an edit
        ("challenged", "challenged", False),
    ],
)
def test_which_moves_tell_the_citers(before: str, after: str, told: bool) -> None:
    assert impacts_citers(before, after) is told
