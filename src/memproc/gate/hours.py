"""Hours narrowed: a service, a room or a role available for a shorter part of the day.

A step that keeps something open "09:00-21:00" and now "09:00-17:00", or "around the clock"
and now "interns 08:30-19:30 only", closes it for the hours in between. A dependent that uses
it at a time in those hours (a delivery at 19:15, a restock at 03:40) now finds it closed.
The dependent's step must name something of the revised part of the step (the role, the
building), so that a time of day stated for another purpose is not read against it.
"""

from __future__ import annotations

import re

from memproc.gate import schedule, sequence
from memproc.gate.facts import Facts
from memproc.gate.model import Finding
from memproc.gate.text import content_stems, equivalent

# A span of the day ("09:30-17:30", "8:00 to 21:00"), or all of it ("24/7", "24 hours").
_SPAN = re.compile(
    r"\b((?:[01]?\d|2[0-3])[:.h][0-5]\d)\s*(?:-|–|to|until)\s*((?:[01]?\d|2[0-3])[:.h][0-5]\d)\b",
    re.I,
)
_ALL_DAY = re.compile(r"\b24\s*/\s*7\b|\b24\s*h(?:ours)?\b|\baround the clock\b", re.I)
_DAY = 1440
Span = tuple[int, int]


def spans(text: str) -> list[Span]:
    """The spans of the day a text keeps something open, in minutes after midnight."""
    if _ALL_DAY.search(text):
        return [(0, _DAY)]
    found = []
    for match in _SPAN.finditer(text):
        start, end = schedule.clock(match.group(1)), schedule.clock(match.group(2))
        if start is not None and end is not None:
            found.append((start, end))
    return found


def _covers(span: Span, minute: int) -> bool:
    start, end = span
    if start == 0 and end == _DAY:
        return True
    return start <= minute < end if start <= end else minute >= start or minute < end


def _times(text: str) -> list[int]:
    """The times of day a dependent's step says it acts: each clock time, and for a span its
    start and an inner minute (a span is used throughout)."""
    found = []
    if not _ALL_DAY.search(text):  # a step at work all day names no hour of its own
        for start, end in spans(text):
            found += [start, (start + ((end - start) % _DAY) // 2) % _DAY]
    if not found and (at := schedule.clock(text)) is not None:
        found.append(at)
    return found


def narrowed_hours(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A part of a step now open for fewer hours, against a dependent that acts in the hours
    it lost."""
    for i, j in sorted(sequence.pair(old.procedure, revision.procedure).pairs.items()):
        before_text = old.procedure.steps[i].text
        before = spans(before_text)
        if not before:
            continue
        for part in re.split(r"[;|]", revision.procedure.steps[j].text):
            after = spans(part)
            if not after or after == before:
                continue
            for source, text in dependent.texts:
                minute = (
                    _lost_minute(before, after, part, text) if source.startswith("step") else None
                )
                if minute is not None:
                    said = f"{minute // 60:02d}:{minute % 60:02d}"
                    detail = (
                        f"the revision keeps '{part.strip()}' (step {j + 1}) where it was "
                        f"'{before_text}'; the dependent acts at {said} ({source})"
                    )
                    evidence = {"old": before_text, "new": part.strip(), "dependent": text}
                    return [Finding(dependent.procedure.id, "tightened_limit", detail, evidence)]
    return []


def _lost_minute(before: list[Span], after: list[Span], part: str, text: str) -> int | None:
    """A time the dependent's step acts at that the old spans kept open and the new ones do
    not, when the step names something of the revised part."""
    names = content_stems(part)
    theirs = content_stems(text)
    if not any(equivalent(n, t) for n in names for t in theirs):
        return None
    for minute in _times(text):
        if any(_covers(s, minute) for s in before) and not any(_covers(s, minute) for s in after):
            return minute
    return None
