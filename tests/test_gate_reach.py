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


# A duty of named people, carried out by a step the revision adds (a bare subject: one
# with "the" is a definite thing, which `locality` already reads).
GLOVES = replace(
    OLD,
    steps=(*OLD.steps, Step("Unload", "the oven operator unloads the deck oven in heat gloves")),
    preconditions=("Oven operators wear heat gloves at the deck oven",),
)
# The same kind of duty written as a command: it names no one, so it may be anyone's.
SIEVE = replace(
    OLD,
    steps=(Step("Sieve", "sieve the flour before mixing"), *OLD.steps),
    preconditions=("sieve the flour before mixing",),
)
PACKING = proc("b", "pack the orders", ["bakery"], [("Pack", "box the morning orders")])


def test_a_duty_of_a_named_subject_the_dependent_never_mentions_is_not_asked_about() -> None:
    assert assess(OLD, GLOVES, [PACKING]).undecided == []


def test_a_duty_of_a_named_subject_is_asked_about_when_the_dependent_mentions_it() -> None:
    # one shared word, the subject's: below the bar at which a dependent works on a demand
    operator = proc("b", "bake the rolls", ["bakery"], [("Bake", "the operator bakes the rolls")])
    (question,) = assess(OLD, GLOVES, [operator]).undecided
    assert "heat gloves" in question.detail


def test_a_command_is_asked_about_though_the_dependent_shares_only_the_entity() -> None:
    (question,) = assess(OLD, SIEVE, [PACKING]).undecided
    assert "sieve the flour" in question.detail


def test_named_subject_tells_commands_from_statements() -> None:
    from memproc.gate.reach import named_subject

    assert named_subject("sieve the flour before mixing", (SIEVE,)) is None
    assert named_subject("check the flour", ()) is None  # a verb of doing in general
    assert named_subject("crates are sealed at dispatch", ()) == ["crates"]
    assert named_subject("the porter signs the key log", ()) == [
        "the",
        "porter",
        "signs",
        "the",
        "key",
    ]
    assert named_subject("porter signs the key log", ()) == ["porter", "signs"]
