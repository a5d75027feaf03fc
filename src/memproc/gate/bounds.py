"""Limits a revision tightens, and dependents that need what the new limit cuts off.

A bound is a setting or a sentence about a maximum or a minimum: a key or a step with a
bound word (`read_timeout: 45s`, `maxWorkers: 12`, `expire after: 60d`, "at most 40 jobs
an hour") and a quantity (see `units`). It is tightened when the same setting, or the
same step reworded, now allows less: a lower maximum, a higher minimum. Between the two
values lies what the revision newly forbids; a dependent that needs a quantity in that band
(of the same dimension, in one of its steps) worked before and does not now. A quantity
outside the band was already over the old limit, or still fits the new one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memproc.gate import identifiers, schedule, sequence, units, values
from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Finding, Procedure
from memproc.gate.text import content_stems, equivalent

# Words that make a quantity an upper or a lower bound: English words for limits, and the
# abbreviations operations settings use (max, min, ttl), from general knowledge. Data moved
# to an archive after a time is at hand only that long, so "archive" bounds it too.
UPPER_WORDS = lx.words(
    """max maximum limit limits limited cap caps capped ceiling timeout timeouts ttl
    retention retain retained expire expires expiry lifetime lifespan quota delete deleted purge
    purged keep kept archive archived"""
)
LOWER_WORDS = lx.words("min minimum floor least")
# A timeout or a time-to-live given as a bare number is in seconds: the convention of
# configuration formats and client libraries alike (general knowledge).
SECONDS_BY_DEFAULT = lx.words("timeout timeouts ttl")
_PHRASES_UPPER = ("at most", "up to", "no more than", "times out", "time out", "not exceed")
_PHRASES_LOWER = ("at least", "no less than", "no fewer than")
Direction = Literal["upper", "lower"]


@dataclass(frozen=True)
class Bound:
    what: str  # the setting or the step's text
    direction: Direction
    old: units.Quantity
    new: units.Quantity
    where: str


def direction(words: list[str], text: str = "") -> Direction | None:
    lowered = f" {text.lower()} "
    if set(words) & LOWER_WORDS or any(f" {p} " in lowered for p in _PHRASES_LOWER):
        return "lower"
    if set(words) & UPPER_WORDS or any(f" {p} " in lowered for p in _PHRASES_UPPER):
        return "upper"
    return None


def _quantity(text: str, memory: bool, unit_words: list[str]) -> units.Quantity | None:
    """The largest quantity in a value ("0..250MB" -> 250 MB); a bare number takes a unit
    from its key ("ttl_hours: 6")."""
    length = bool(set(unit_words) & units.LENGTH_WORDS)
    found = [q for q in units.scan(text, memory=memory, length=length) if q.dimension != "period"]
    if not found:
        return None
    best = max(found, key=lambda q: q.value)
    if best.dimension == "count":
        for word in unit_words:
            if word in LOWER_WORDS or word in UPPER_WORDS:
                continue  # "min" in min_size is a minimum, not minutes
            if word in units.PERIOD_ADVERBS:  # --keep-weekly 8: 8 weeks
                return units.Quantity("time", best.value * units.PERIOD_ADVERBS[word], best.text)
            measured = units.unit(word, memory=memory)
            if measured is not None:
                return units.Quantity(measured[0], best.value * measured[1], best.text)
        if set(unit_words) & SECONDS_BY_DEFAULT:
            return units.Quantity("time", best.value, f"{best.text} s")
    return best


def _tighter(d: Direction, old: units.Quantity, new: units.Quantity) -> bool:
    if old.dimension != new.dimension:
        return False
    return new.value < old.value if d == "upper" else new.value > old.value


def tightened(old: Procedure, revision: Procedure) -> list[Bound]:
    found = _from_settings(old, revision) + _new_settings(old, revision)
    seen = {b.where for b in found}
    found += [b for b in _from_steps(old, revision) if b.where not in seen]
    return found + _from_preconditions(old, revision)


def _from_settings(old: Procedure, revision: Procedure) -> list[Bound]:
    found = []
    for change in values.changed(old, revision):
        words = change.words
        # A configured size or capacity ("proxy-body-size", "disk_capacity") is the most
        # that fits: an upper bound, whether or not its key says "max".
        d = direction(words) or ("upper" if set(words) & _CAPACITY_WORDS else None)
        if d is None:
            continue
        memory = bool(set(words) & units.SIZE_WORDS)
        before = _quantity(change.old, memory, words)
        after = _quantity(change.new, memory, words)
        if before and after and _unlimited(d, before):
            before = units.Quantity(after.dimension, _UNBOUNDED[d], f"{before.text} (no limit)")
        if before and after and _tighter(d, before, after):
            found.append(Bound(change.key, d, before, after, change.where))
    return found


_UNBOUNDED = {"upper": float("inf"), "lower": 0.0}
_CAPACITY_WORDS = lx.words("size capacity")


def _unlimited(d: Direction, quantity: units.Quantity) -> bool:
    """A maximum duration of zero: how configuration formats commonly say "no timeout"
    (PostgreSQL's `*_timeout = 0`, many HTTP clients' `timeout: 0`)."""
    return d == "upper" and quantity.dimension == "time" and quantity.value == 0


def _from_preconditions(old: Procedure, revision: Procedure) -> list[Bound]:
    """A new or reworded precondition that sets a limit ("uploads must not exceed 50 MB"):
    tighter than the same dimension's limit in the old preconditions, or new."""
    old_texts = set(old.preconditions)
    old_limits: dict[str, units.Quantity] = {}
    for text in old.preconditions:
        d = direction(prose_words(text), text)
        for dimension, q in _largest(text, _about_length(text)).items():
            if d is not None:
                old_limits[dimension] = q
    found = []
    for number, text in enumerate(revision.preconditions, start=1):
        d = direction(prose_words(text), text)
        if text in old_texts or d is None:
            continue
        for dimension, new_q in _largest(text, _about_length(text)).items():
            if dimension == "count":
                continue  # a bare count beside a limit word is too often something else
            old_q = old_limits.get(dimension) or units.Quantity(
                dimension, _UNBOUNDED[d], "no limit"
            )
            if _tighter(d, old_q, new_q):
                found.append(Bound(text, d, old_q, new_q, f"precondition {number}"))
    return found


def _about_length(text: str) -> bool:
    return bool(set(re.findall(r"[a-z]+", text.lower())) & units.LENGTH_WORDS)


def _new_settings(old: Procedure, revision: Procedure) -> list[Bound]:
    """A bound set where there was none (`statement_timeout = 30s` added): everything past
    it is newly cut off. Only measured bounds (time, size, rate): a bare count is too often
    something else."""
    before = {s.key for s in values.settings(old)}
    found = []
    for setting in values.settings(revision):
        d = direction(setting.words)
        if setting.key in before or d is None:
            continue
        memory = bool(set(setting.words) & units.SIZE_WORDS)
        new = _quantity(setting.value, memory, setting.words)
        if new is None or new.dimension == "count":
            continue
        old_q = units.Quantity(new.dimension, _UNBOUNDED[d], "no limit")
        found.append(Bound(setting.key, d, old_q, new, setting.where))
    return found


def _from_steps(old: Procedure, revision: Procedure) -> list[Bound]:
    """A reworded step whose limit sentence now allows less."""
    found = []
    pairing = sequence.pair(old, revision)
    for i, j in sorted(pairing.pairs.items()):
        before, after = old.steps[i].text, revision.steps[j].text
        if before == after:
            continue
        d = direction(prose_words(after), after)
        if d is None:
            continue
        for old_q, new_q in _same_dimension(before, after):
            if _tighter(d, old_q, new_q):
                found.append(Bound(after, d, old_q, new_q, f"step {j + 1}"))
                break
    return found


def prose_words(text: str) -> list[str]:
    """The words of a sentence without its quantities: "20 jobs/min" holds no "min"."""
    text = re.sub(r"\d+(?:[.,]\d+)?\s*[a-z]*", " ", text.lower())
    text = re.sub(
        r"(?:/|\bper\s+|\ba\s+)(?:second|sec|s|minute|min|m|hour|hr|h|day|d)\b", " ", text
    )
    return re.findall(r"[a-z]+", text)


def _same_dimension(before: str, after: str) -> list[tuple[units.Quantity, units.Quantity]]:
    """The largest quantity of each dimension both texts hold; measured ones before counts
    (a count beside a rate is usually a status code or a batch size)."""
    old_by, new_by = _largest(before), _largest(after)
    shared = [d for d in old_by if d in new_by]
    shared.sort(key=lambda d: d == "count")
    return [(old_by[d], new_by[d]) for d in shared]


def _largest(text: str, length: bool = False) -> dict[str, units.Quantity]:
    found: dict[str, units.Quantity] = {}
    for q in units.scan(text, length=length):
        if q.dimension != "period" and (
            q.dimension not in found or q.value > found[q.dimension].value
        ):
            found[q.dimension] = q
    return found


def needs_in_band(bound: Bound, dependent: Facts) -> tuple[str, units.Quantity] | None:
    """A quantity of the dependent the new bound cuts off and the old one allowed."""
    for source, text in dependent.texts:
        if not source.startswith("step"):
            continue
        # Read the dependent in the bound's terms: "6g" is memory beside a memory limit, and
        # "3 m" a length beside a height limit.
        memory, length = bound.new.dimension == "size", bound.new.dimension == "length"
        # Against a limit on time, a step that says how long it runs needs that long.
        running = schedule.run_times(text) if bound.new.dimension == "time" else []
        said = " ; ".join(running) or schedule.with_digits(text, articles=False)
        for q in units.scan(said, memory=memory, length=length):
            dimension = "time" if q.dimension == "period" else q.dimension  # "renews every 60s"
            if dimension != bound.new.dimension:
                continue
            lo, hi = sorted((bound.old.value, bound.new.value))
            inside = lo < q.value <= hi if bound.direction == "upper" else lo <= q.value < hi
            if inside:
                return source, q
    return None


def span_in_band(
    bound: Bound, revision: Facts, dependent: Facts
) -> tuple[str, units.Quantity] | None:
    """A stretch of the week the dependent covers ("replays the queue from Friday to
    Monday") that a shortened time limit no longer keeps, in a step that names a resource
    the revision names: a span of days in an unrelated step is a schedule, not data kept."""
    if bound.new.dimension != "time" or bound.direction != "upper":
        return None
    # A hyphenated name counts here ("orders-eu"): beside a shortened limit and a span of
    # days in one clause, a shared one is the resource the limit keeps.
    kinds = identifiers.NAMING_KINDS | {"hyphenated"}
    theirs = [i for i in revision.identifiers if i.kind in kinds]
    for source, text in dependent.texts:
        if not source.startswith("step"):
            continue
        for clause in values.segments(text):
            hit = _span_named(bound, clause, theirs)
            if hit is not None:
                return source, hit
    return None


def _span_named(
    bound: Bound, clause: str, theirs: list[identifiers.Identifier]
) -> units.Quantity | None:
    named = any(identifiers.same(a, b) for a in identifiers.find(clause) for b in theirs)
    if named:
        for minutes in schedule.week_spans(clause):
            if bound.new.value < minutes * 60 <= bound.old.value:
                said = f"{minutes / 1440:g} days" if minutes % 1440 == 0 else f"{minutes / 60:g} h"
                return units.Quantity("time", minutes * 60, said)
    return None


def tightened_bounds(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    findings = []
    for bound in tightened(old.procedure, revision.procedure):
        hit = needs_in_band(bound, dependent) or span_in_band(bound, revision, dependent)
        if hit is None:
            continue
        source, quantity = hit
        findings.append(
            Finding(
                dependent_id=dependent.procedure.id,
                pattern="tightened_limit",
                detail=(
                    f"the revision tightens {bound.what} from {bound.old.text} to "
                    f"{bound.new.text} ({bound.where}); the dependent needs {quantity.text} "
                    f"({source}), which the old limit allowed"
                ),
                evidence={"old": bound.old.text, "new": bound.new.text, "dependent": quantity.text},
            )
        )
    return findings


# How a dependent states the longest it may go between two acts: "at least every 10 weeks",
# "within the past 45 days" (English).
_AT_MOST_APART = re.compile(
    r"\b(?:at\s+least\s+(?:once\s+)?every|within\s+(?:the\s+)?(?:last|past|previous)?)\s+"
    r"(\d+(?:\.\d+)?\s*[A-Za-z]+)",
    re.I,
)


def lengthened_periods(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A step now done less often ("every 3 months" -> "every 6 months"), against a dependent
    that needs it done at least every so often: between the old period and the new one."""
    for i, j in sorted(sequence.pair(old.procedure, revision.procedure).pairs.items()):
        before = [q for q in units.scan(old.procedure.steps[i].text) if q.dimension == "period"]
        after_text = revision.procedure.steps[j].text
        after = [q for q in units.scan(after_text) if q.dimension == "period"]
        if len(before) != 1 or len(after) != 1 or after[0].value <= before[0].value:
            continue
        acts = _content(after_text)
        for source, text in dependent.texts:
            if not source.startswith("step"):
                continue
            for match in _AT_MOST_APART.finditer(schedule.with_digits(text, articles=False)):
                needed = units.scan(match.group(1))
                if not needed or not before[0].value <= needed[0].value < after[0].value:
                    continue
                if not any(equivalent(a, w) for a in acts for w in _content(text)):
                    continue  # a need about another act
                detail = (
                    f"the revision does step {j + 1} every {after[0].text} where it did it "
                    f"every {before[0].text}; the dependent needs it at least every "
                    f"{match.group(1)} ({source})"
                )
                evidence = {"old": before[0].text, "new": after[0].text, "dependent": text}
                return [Finding(dependent.procedure.id, "tightened_limit", detail, evidence)]
    return []


def _content(text: str) -> set[str]:
    """Content stems of four letters or more, its quantities left out ("every 6 months")."""
    return content_stems(" ".join(prose_words(text)), min_chars=4)
