"""The step-sequence diff: which steps of the old version became which of the revision.

Steps are paired by their text: equal text first, then the most similar remaining pair (the
share of content stems two steps have in common, the action weighing double) above a
threshold, then a step kept under the same action however much its detail was rewritten
("Hours | all day" -> "Hours | weekdays 07:15-19:15"). From the pairing follow the added
and removed steps, the steps that moved (not on the longest run that kept its order), and
the steps whose text changed in place.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memproc.gate.model import Procedure, Step
from memproc.gate.text import split_clauses

# Share of content stems two steps must share to be the same step, reworded.
SAME_STEP = 0.34


@dataclass(frozen=True)
class Pairing:
    """Old step index -> revision step index (0-based), for the steps that correspond."""

    pairs: dict[int, int] = field(default_factory=dict)
    old_count: int = 0
    new_count: int = 0

    @property
    def removed(self) -> list[int]:
        return [i for i in range(self.old_count) if i not in self.pairs]

    @property
    def added(self) -> list[int]:
        taken = set(self.pairs.values())
        return [j for j in range(self.new_count) if j not in taken]

    @property
    def moved(self) -> list[int]:
        """Old indices of paired steps off the longest order-keeping run."""
        ordered = sorted(self.pairs.items())
        keep = _longest_increasing([j for _, j in ordered])
        return [i for k, (i, _) in enumerate(ordered) if k not in keep]

    def new_index(self, old_index: int) -> int | None:
        return self.pairs.get(old_index)


def _stems(step: Step) -> tuple[set[str], set[str]]:
    action = {s for c in split_clauses(step.action, "", 0) for s in c.stems()}
    detail = {s for c in split_clauses(step.detail, "", 0) for s in c.stems()}
    return action, detail


def similarity(a: Step, b: Step) -> float:
    (a_action, a_detail), (b_action, b_detail) = _stems(a), _stems(b)
    shared = 2 * len(a_action & b_action) + len(a_detail & b_detail)
    total = 2 * len(a_action | b_action) + len(a_detail | b_detail)
    return shared / total if total else float(a.action.strip() == b.action.strip())


def pair(old: Procedure, revision: Procedure) -> Pairing:
    old_steps, new_steps = list(old.steps), list(revision.steps)
    pairs: dict[int, int] = {}
    taken: set[int] = set()
    for i, step in enumerate(old_steps):  # identical text first, in order
        for j, other in enumerate(new_steps):
            if j not in taken and _key(step) == _key(other):
                pairs[i] = j
                taken.add(j)
                break
    scored = sorted(
        (
            (similarity(step, other), i, j)
            for i, step in enumerate(old_steps)
            if i not in pairs
            for j, other in enumerate(new_steps)
            if j not in taken
        ),
        key=lambda t: (-t[0], t[1], t[2]),
    )
    for score, i, j in scored:
        if score >= SAME_STEP and i not in pairs and j not in taken:
            pairs[i] = j
            taken.add(j)
    for i, step in enumerate(old_steps):  # the same action, its detail rewritten
        for j, other in enumerate(new_steps):
            same = other.action.strip().lower() == step.action.strip().lower()
            if i not in pairs and j not in taken and same:
                pairs[i] = j
                taken.add(j)
    return Pairing(pairs, len(old_steps), len(new_steps))


def _key(step: Step) -> tuple[str, str]:
    return step.action.strip().lower(), step.detail.strip().lower()


def _longest_increasing(values: list[int]) -> set[int]:
    """Positions of one longest strictly increasing subsequence (quadratic; steps are few)."""
    if not values:
        return set()
    best = [1] * len(values)
    back = [-1] * len(values)
    for k in range(len(values)):
        for m in range(k):
            if values[m] < values[k] and best[m] + 1 > best[k]:
                best[k], back[k] = best[m] + 1, m
    k = max(range(len(values)), key=lambda n: (best[n], -n))
    keep = set()
    while k != -1:
        keep.add(k)
        k = back[k]
    return keep


def step_text(step: Step) -> str:
    return f"{step.action} | {step.detail}" if step.detail else step.action
