"""A changed quantity that moves across a value of the same kind the dependent states.

A step the revision keeps now says another duration, size, rate, time of day or day of the
week than it did. A dependent that states a value of the same dimension lying between the old
and the new one, or equal to either, was written against the old value: whatever relation
held between its value and the procedure's (shorter, later, on the same day), the change
turns it round or makes it newly equal. That is a finding (`changed_value`), not a question:
the dependent worked with one side of the change and is now on the other. A limit that now
allows more (`bounds`: a maximum raised, a minimum lowered) takes nothing from anyone and is
not one. This reading was a question for the judge at first; on every labelled set together
26 of the 29 pairs it asked about were breaking, more than any question the gate asks, so it
decides them (the three others are quarantined for review, as the gate fails closed).

The dimensions are the ones the gate already reads: durations, sizes, rates, periods and
lengths (`units`), measured quantities and money (`measures`), times of day and days of the
week (`schedule`); besides them, percentages, and a bare number set under a key that names
its unit (`purge_after_days: 10`). Bare counts are left out: two counts of different things
compare as nothing, and a text says too little to tell which things a count counts.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from memproc.gate import bounds, measures, schedule, sequence, units, values
from memproc.gate.facts import Facts, demand_texts
from memproc.gate.model import Finding

_DAY_NAMES = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_WEEKDAY = "day of the week"
_CLOCK = "time of day"
_SHARE = "percentage"
_BARE_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# "min" in `min_replicas` is a minimum, not minutes
_BOUND_WORDS = bounds.LOWER_WORDS | bounds.UPPER_WORDS
_PERCENT = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*(?:%|percent\b|per cent\b)", re.I)


@dataclass(frozen=True)
class Value:
    dimension: str
    amount: float  # in the dimension's base unit; minutes for a time of day, 0-6 for a day
    text: str  # as written


@dataclass(frozen=True)
class Crossing:
    step: str
    was: Value
    now: Value
    stated: Value

    @property
    def relation(self) -> str:
        if _same(self.stated.amount, self.was.amount):
            return "the old value"
        if _same(self.stated.amount, self.now.amount):
            return "the new value"
        return "between the two"


def quantities(text: str) -> list[Value]:
    """The quantities of `text` that have a dimension."""
    found = [Value(q.dimension, q.value, q.text) for q in units.scan(text)]
    found = [v for v in found if v.dimension != "count"]
    found += [Value(m.dimension, m.value, m.text) for m in measures.quantities(text)]
    found += [Value(_CLOCK, float(minutes), said) for minutes, said in schedule.clocks(text)]
    found += [Value(_WEEKDAY, float(day), _DAY_NAMES[day]) for day in sorted(schedule.days(text))]
    found += [Value(_SHARE, float(m.group(1)), m.group(0)) for m in _PERCENT.finditer(text)]
    return found + _unit_keyed(text)


def _unit_keyed(text: str) -> list[Value]:
    """A bare number set under a key that names its unit (`keepDays=3`, `--keep-days 20`,
    `timeout_seconds: 30`)."""
    found = []
    for setting in values.settings_of_text(text, ""):
        number = setting.value.split()[0] if setting.value else ""
        if not _BARE_NUMBER.fullmatch(number):
            continue
        for word in setting.words:
            measured = units.unit(word)
            if measured is not None and len(word) > 1 and word not in _BOUND_WORDS:
                dimension, factor = measured
                said = f"{setting.name} {number}"
                found.append(Value(dimension, float(number) * factor, said))
                break
    return found


def crossed_values(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A finding when a step (or the trigger) of the revision changed a value across, or
    onto, one the dependent states; none otherwise."""
    stated = [v for text in _texts(dependent) for v in quantities(text)]
    for step, was, now in _edited(old, revision):
        crossing = _crossing(step, was, now, stated)
        if crossing is not None:
            detail = (
                f"the revision changes '{crossing.step}' from {crossing.was.text} to "
                f"{crossing.now.text}; the dependent states {crossing.stated.text} "
                f"({crossing.stated.dimension}), {crossing.relation}: it was written against "
                "the old value, and the change moves past it or onto it"
            )
            evidence = {
                "revision": crossing.now.text,
                "old": crossing.was.text,
                "dependent": crossing.stated.text,
            }
            return [Finding(dependent.procedure.id, "changed_value", detail, evidence)]
    return []


def _edited(old: Facts, revision: Facts) -> list[tuple[str, str, str]]:
    """(name, old text, new text) of each step kept but reworded, and of a changed trigger."""
    before, after = old.procedure, revision.procedure
    found = [
        (after.steps[j].action, before.steps[i].text, after.steps[j].text)
        for i, j in sequence.pair(before, after).pairs.items()
        if before.steps[i].text != after.steps[j].text
    ]
    if before.trigger and after.trigger and before.trigger != after.trigger:
        found.append(("trigger", before.trigger, after.trigger))
    return found


def _crossing(step: str, was_text: str, now_text: str, stated: list[Value]) -> Crossing | None:
    was, now = quantities(was_text), quantities(now_text)
    bound = bounds.direction(bounds.prose_words(now_text), now_text)
    for theirs in stated:
        gone = [v for v in was if v.dimension == theirs.dimension and not _among(v, now)]
        new = [v for v in now if v.dimension == theirs.dimension and not _among(v, was)]
        for a in gone:
            for b in new:
                if _loosened(bound, a, b):
                    continue  # a limit that now allows more takes nothing from anyone
                if _across(a.amount, b.amount, theirs):
                    return Crossing(step, a, b, theirs)
    return None


def _loosened(bound: bounds.Direction | None, was: Value, now: Value) -> bool:
    if bound == "upper":
        return now.amount > was.amount
    return bound == "lower" and now.amount < was.amount


def _across(a: float, b: float, theirs: Value) -> bool:
    """`theirs` equals either end or, on a line (not the days of a week), lies between."""
    v = theirs.amount
    if _same(v, a) or _same(v, b):
        return True
    return theirs.dimension != _WEEKDAY and min(a, b) < v < max(a, b)


def _among(value: Value, others: list[Value]) -> bool:
    return any(o.dimension == value.dimension and _same(o.amount, value.amount) for o in others)


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


def _texts(facts: Facts) -> list[str]:
    return [text for _, text in facts.texts] + list(demand_texts(facts.procedure))
