"""What a revision changed, typed: the change set a judge (or a reviewer) reads.

Built from the step-sequence diff, the values of the same settings on both sides, the
preconditions and the declared outputs; it is a description, never a verdict.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memproc.gate import sequence, values
from memproc.gate.facts import demand_texts
from memproc.gate.model import Procedure, Produced


@dataclass(frozen=True)
class ValueChange:
    key: str
    old: str | None
    new: str | None
    where: str = ""


@dataclass(frozen=True)
class Changes:
    added_steps: list[str] = field(default_factory=list)
    removed_steps: list[str] = field(default_factory=list)
    moved_steps: list[str] = field(default_factory=list)
    changed_values: list[ValueChange] = field(default_factory=list)
    added_preconditions: list[str] = field(default_factory=list)
    removed_preconditions: list[str] = field(default_factory=list)
    contract: list[ValueChange] = field(default_factory=list)


def changes(old: Procedure, revision: Procedure) -> Changes:
    pairing = sequence.pair(old, revision)
    before, after = demand_texts(old), demand_texts(revision)
    return Changes(
        added_steps=[sequence.step_text(revision.steps[j]) for j in pairing.added],
        removed_steps=[sequence.step_text(old.steps[i]) for i in pairing.removed],
        moved_steps=[sequence.step_text(old.steps[i]) for i in pairing.moved],
        changed_values=[
            ValueChange(c.key, c.old, c.new, c.where) for c in values.changed(old, revision)
        ],
        added_preconditions=[t for t in after if t not in before],
        removed_preconditions=[t for t in before if t not in after],
        contract=_contract(old.produces, revision.produces),
    )


_FIELDS = ("format", "version", "location", "available_after")


def _contract(before: tuple[Produced, ...], after: tuple[Produced, ...]) -> list[ValueChange]:
    old_by_id, new_by_id = {p.id: p for p in before}, {p.id: p for p in after}
    found = []
    for output_id in sorted(old_by_id.keys() | new_by_id.keys()):
        old, new = old_by_id.get(output_id), new_by_id.get(output_id)
        if old is None or new is None:
            before_id, after_id = old.id if old else None, new.id if new else None
            found.append(ValueChange("id", before_id, after_id, f"produces[id={output_id}]"))
            continue
        for name in _FIELDS:
            if getattr(old, name) != getattr(new, name):
                where = f"produces[id={output_id}].{name}"
                found.append(ValueChange(name, getattr(old, name), getattr(new, name), where))
    return found
