"""When each step of a procedure is done: the chain of its stated times and durations.

Runbooks say when things happen in several ways: a time of day a step starts at ("starts
01:30", "at 23:00"), a time it is done by ("done by 03:30"), how long it takes ("about 40
minutes", "takes 2 h", "for half an hour", a detail that opens with "45 s"), or a moment
after the procedure starts ("roughly 35 min after the load starts"). Read in order they give
when each step is done, in one of two frames: minutes after midnight of the day the
procedure starts, when it states a time of day, else minutes after it starts.

A revision often leaves such statements stale: a long step inserted before one that still
says "done by 03:30", or a first step that no longer repeats the start time. So the chain
takes the later of what is stated and what the durations give; a step the revision kept
word for word takes as long as it did in the old chain; and a revision that states no time
of day starts when the old version did.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memproc.gate import schedule, sequence
from memproc.gate.model import Procedure, Step

# Words that say when something is over (English): "done by 07:00", "ends ~05:30".
END_WORDS = r"finish\w*|ends?|ended|done|ready|complet\w*|until|lands?"
CLOCK_TEXT = r"\D{0,12}?(\d{1,2}[:.h]\d{2}\s*(?:am|pm)?)"
# In a step's own text, a time it is done by: the same, and "by 06:40".
_END_CLOCK = re.compile(rf"\b(?:by|{END_WORDS})\b{CLOCK_TEXT}", re.I)
_UNIT = r"(?:seconds?|secs?|minutes?|mins?|hours?|hrs?|h|m)"
# A duration a step states for itself: "(about 75 min)", "roughly 5 hours", "~25 minutes".
_ABOUT = re.compile(
    rf"(?:\babout|\baround|\broughly|\bapprox\w*|~)\s*(\d+(?:\.\d+)?\s*{_UNIT})\b", re.I
)
# "takes 40 minutes", "adds 25 min", "soak it for 12 minutes", "for up to 9 minutes".
_TAKES = re.compile(
    rf"\b(?:takes?|took|adds?|lasts?|runs? for|needs?|for)\s+(?:about\s+|around\s+|up\s+to\s+|~)?"
    rf"(\d+(?:\.\d+)?\s*{_UNIT})\b",
    re.I,
)
# A detail that opens with its duration: "45 s at full speed", "2 h in the kiln".
_OPENING = re.compile(rf"\s*(\d+(?:\.\d+)?\s*{_UNIT})\b(?!\s*(?:after|before|later)\b)", re.I)
# A moment after the procedure starts: "roughly 35 min after the load starts", "8 min in".
_MOMENT = re.compile(
    rf"(?:(?:about|around|roughly|~)\s*)?(\d+(?:\.\d+)?\s*{_UNIT})\s+"
    rf"(?:after\b[^,;.]{{0,40}}?\b(?:starts?|started|start|begins?|kick\w* off)\b|in\b(?!\s+\w))",
    re.I,
)


def step_minutes(step: Step) -> float:
    """The durations a step states for itself; a moment after the start is not one."""
    detail = schedule.with_digits(step.detail)
    text = _MOMENT.sub(" ", f"{schedule.with_digits(step.action)} {detail}")
    total = 0.0
    for match in _ABOUT.finditer(text):
        total += schedule.duration(match.group(1)) or 0.0
    for match in _TAKES.finditer(text):
        if not _ABOUT.search(match.group(0)):
            total += schedule.duration(match.group(1)) or 0.0
    opening = _OPENING.match(detail)
    if opening and not _MOMENT.match(detail) and not _ABOUT.search(opening.group(0)):
        total += schedule.duration(opening.group(1)) or 0.0
    return total


def stated_minutes(procedure: Procedure) -> float:
    return sum(step_minutes(step) for step in procedure.steps)


def start_at(text: str) -> int | None:
    """A time of day the text starts something at, not one it is done by."""
    return schedule.clock(_END_CLOCK.sub(" ", text))


def first_time(procedure: Procedure) -> int | None:
    """The first time of day the procedure starts something at: its trigger, else a step."""
    for text in [procedure.trigger or ""] + [_text(s) for s in procedure.steps]:
        at = start_at(text)
        if at is not None:
            return at
    return None


# A time of day given as an estimate of when the chain gets there ("about 03:00", "by
# ~06:40", "usually 05:10"), not a time the step waits for (English hedges).
_ESTIMATE = re.compile(
    r"\b(?:about|around|roughly|approx\w*|usually|typically|normally|by)\s*~?\s*"
    r"\d{1,2}[:.h]\d{2}|~\s*\d{1,2}[:.h]\d{2}",
    re.I,
)


def _moment(step: Step) -> float | None:
    match = _MOMENT.search(schedule.with_digits(_text(step)))
    return None if match is None else schedule.duration(match.group(1))


@dataclass(frozen=True)
class Timeline:
    """When each step is done (`done`) and how long it took (`took`), in minutes: after
    midnight of the starting day in the `clock` frame (past 1440 on the next day), after
    the start in the `offset` frame."""

    frame: Literal["clock", "offset"]
    start: float
    done: tuple[float, ...]
    took: tuple[float, ...]
    # The time before a step whose time of day is an estimate ("about 03:00"): the work of
    # the steps before it that they did not state.
    lead: tuple[float, ...] = ()

    def after_start(self, index: int) -> float:
        return self.done[index] - self.start


def read(
    procedure: Procedure,
    start: int | None = None,
    kept: dict[int, float] | None = None,
    leads: dict[int, float] | None = None,
) -> Timeline:
    """The chain of the procedure's steps. `start`: the time of day it starts when it states
    none itself; `kept`: the least time a step takes, by index (what it took before);
    `leads`: the least time before a step (the unstated work it waited for before)."""
    own = first_time(procedure)
    begin = own if own is not None else start
    frame: Literal["clock", "offset"] = "clock" if begin is not None else "offset"
    origin = float(begin) if begin is not None else 0.0
    now, done, took, lead = origin, list[float](), list[float](), list[float]()
    for index, step in enumerate(procedure.steps):
        text = _text(step)
        previous = now
        if frame == "clock":
            at = start_at(text)
            if at is not None:
                now = max(now, _on_or_after(at, origin))
            now = max(now, previous + (leads or {}).get(index, 0.0))
        estimated = frame == "clock" and bool(_ESTIMATE.search(text))
        lead.append(now - previous if estimated else 0.0)
        moment = _moment(step)
        if moment is not None:
            now = max(now, origin + moment)
        began = now
        now += max(step_minutes(step), (kept or {}).get(index, 0.0))
        if frame == "clock":
            for match in _END_CLOCK.finditer(text):
                end = schedule.clock(match.group(1))
                if end is not None:
                    now = max(now, _on_or_after(end, origin))
        done.append(now)
        took.append(now - began)
    return Timeline(frame, origin, tuple(done), tuple(took), tuple(lead))


def revised(old: Procedure, revision: Procedure) -> tuple[Timeline, Timeline]:
    """The old chain and the revision's, the revision starting when the old one did unless
    it says otherwise, and each step it kept word for word taking as long as it did."""
    before = read(old)
    pairs = sequence.pair(old, revision).pairs
    same = {i: j for i, j in pairs.items() if _text(old.steps[i]) == _text(revision.steps[j])}
    kept = {j: before.took[i] for i, j in same.items()}
    leads = {j: before.lead[i] for i, j in same.items() if before.lead[i]}
    start = int(before.start) % 1440 if before.frame == "clock" else None
    after = read(revision, start, kept, leads)
    if after.frame == "clock" and before.frame == "clock" and after.start + 720 < before.start:
        shift = 1440.0  # the revision starts after midnight, the old version before it
        done = tuple(d + shift for d in after.done)
        after = Timeline(after.frame, after.start + shift, done, after.took, after.lead)
    return before, after


def _on_or_after(at: int, origin: float) -> float:
    """A time of day in the chain that began at `origin`: the next day when it reads more
    than twelve hours before the start."""
    return at + (1440.0 if at + 720 < origin else 0.0)


def _text(step: Step) -> str:
    return f"{step.action} {step.detail}"
