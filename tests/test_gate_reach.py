"""Which unmet demands of inferred reach are a question for the judge, on workflows written
for this test: a bakery's proving room and the procedures that share the bakery."""

from __future__ import annotations

from dataclasses import replace

from gatekit import proc, verdict
from memproc.gate import Step, assess

OLD = proc(
    "a",
    "prove the dough",
    ["bakery"],
    [("Shape", "shape the loaves on floured boards"), ("Prove", "prove the loaves for 50 minutes")],
)
# a condition of the proving room itself, which no step of the revision carries out
ROOM = replace(OLD, preconditions=("The proving cabinet humidity stays near 80 percent",))
# a duty the revision newly performs in a step of its own
DUTY = replace(
    OLD,
    steps=(*OLD.steps, Step("Label", "label each tray with its allergen card")),
    preconditions=("Trays carry an allergen card",),
)


def test_a_condition_of_the_revisions_own_setting_is_not_asked_about() -> None:
    packing = proc("b", "pack the orders", ["bakery"], [("Pack", "box the morning orders")])
    assert verdict(OLD, ROOM, packing) == []


def test_a_dependent_that_works_on_what_the_demand_is_about_is_asked() -> None:
    cabinet = proc(
        "b", "clean the bakery", ["bakery"], [("Cabinet", "wipe the proving cabinet racks")]
    )
    result = assess(OLD, ROOM, [cabinet])
    (question,) = result.undecided
    assert "whether the demand binds the dependent is not stated" in question.detail


def test_a_duty_the_revision_carries_out_is_asked_about() -> None:
    trays = proc("b", "stock the shop", ["bakery"], [("Shelves", "move trays to the shop shelves")])
    result = assess(OLD, DUTY, [trays])
    (question,) = result.undecided
    assert "allergen card" in question.detail
