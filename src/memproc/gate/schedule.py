"""Times of day, durations and schedules, read from contract fields and step text.

Timing questions ("is the output still ready when the dependent runs?") need the two sides in
one frame: a time of day in minutes after midnight, or a duration in minutes after the
producing procedure starts. A dependent's schedule is its `trigger` (or a step that says when
it runs): a clock time ("daily at 05:40 UTC", "cron 40 5 * * *"), an offset after another
procedure starts ("2h after 'load' starts"), or an event (it waits for a completion signal,
so a later output can never be early for it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from memproc.gate import lexicon as lx

_CLOCK = re.compile(r"\b([01]?\d|2[0-3])[:.h]([0-5]\d)\s*(am|pm)?\b", re.I)
_CLOCK_AMPM = re.compile(r"\b(1[0-2]|0?[1-9])\s*(am|pm)\b", re.I)
_CRON = re.compile(r"\b(\d{1,2})\s+(\d{1,2})\s+[\d*/,-]+\s+[\d*/,-]+\s+[\d*/,A-Za-z-]+")
_DURATION = re.compile(
    r"(\d+(?:\.\d+)?)\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)(?![a-z])", re.I
)
_UNIT_MINUTES = {"s": 1 / 60, "m": 1.0, "h": 60.0, "d": 1440.0}
# Words that make a trigger an event: the dependent starts when something has happened.
# Common English for completion and arrival, not drawn from any one workflow.
_EVENT_WORDS = re.compile(
    r"\b(on|upon|after|when|once)\b[^.;]*\b(complet\w*|finish\w*|succe\w*|done|ends?|"
    r"arriv\w*|lands?|publish\w*|written|ready|signal\w*|message|event|notification)\b",
    re.I,
)
_OFFSET = re.compile(
    r"((?:\d+(?:\.\d+)?\s*(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h)\s*)+?)\s*after\b"
    r"(?:\s+['\"]?(?P<name>[^'\"]+?)['\"]?)?\s+(?:starts?|begins?|kicks? off)\b",
    re.I,
)


def clock(text: str) -> int | None:
    """The first time of day in `text`, in minutes after midnight: "05:40" -> 340."""
    match = _CLOCK.search(text)
    if match:
        hour, minute = int(match.group(1)), int(match.group(2))
        return _twelve_hour(hour, match.group(3)) * 60 + minute
    match = _CLOCK_AMPM.search(text)
    if match:
        return _twelve_hour(int(match.group(1)), match.group(2)) * 60
    match = _CRON.search(text)
    if match and int(match.group(1)) < 60 and int(match.group(2)) < 24:
        return int(match.group(2)) * 60 + int(match.group(1))
    return None


def clocks(text: str) -> list[tuple[int, str]]:
    """Every written time of day in `text` ("05:40", "9 pm"): (minutes after midnight, as
    written)."""
    matches = list(_CLOCK.finditer(text))
    found = [
        (_twelve_hour(int(m.group(1)), m.group(3)) * 60 + int(m.group(2)), m.group(0).strip())
        for m in matches
    ]
    taken = [m.span() for m in matches]
    for m in _CLOCK_AMPM.finditer(text):
        if not any(a <= m.start() < b for a, b in taken):
            found.append((_twelve_hour(int(m.group(1)), m.group(2)) * 60, m.group(0).strip()))
    return found


def _twelve_hour(hour: int, suffix: str | None) -> int:
    if suffix is None:
        return hour
    if suffix.lower() == "pm" and hour < 12:
        return hour + 12
    return 0 if suffix.lower() == "am" and hour == 12 else hour


def duration(text: str) -> float | None:
    """A duration in minutes: "20m" -> 20, "3h" -> 180, "1h15m" -> 75, "30 seconds" -> 0.5."""
    total, found = 0.0, False
    for match in _DURATION.finditer(text):
        total += float(match.group(1)) * _UNIT_MINUTES[match.group(2)[0].lower()]
        found = True
    return total if found else None


# A number written as a word before a unit of time ("two hours", "an hour", "half an hour"):
# English number words from the lexicon, and "half" as the fraction it names.
_TIME_UNIT = r"(seconds?|secs?|minutes?|mins?|hours?|hrs?|days?|weeks?|months?|years?)\b"
# An adjective of a stretch of time may stand between ("the four trailing weeks").
_SPAN_WORD = r"(?:(?:previous|past|last|preceding|prior|trailing|full|whole|calendar)\s+)?"
_HALF = re.compile(r"\bhalf\s+(?:an?\s+)?" + _TIME_UNIT, re.I)
_WORD_NUMBER = re.compile(
    r"\b("
    + "|".join(sorted(lx.NUMBER_WORDS, key=len, reverse=True))
    + r")\s+("
    + _SPAN_WORD
    + _TIME_UNIT
    + ")",
    re.I,
)
# The same without the articles: beside other quantities, "a minute" is a rate's period
# ("300 pages a minute"), not one minute.
_WORD_NUMBER_ONLY = re.compile(
    r"\b("
    + "|".join(sorted(set(lx.NUMBER_WORDS) - {"a", "an"}, key=len, reverse=True))
    + r")\s+("
    + _SPAN_WORD
    + _TIME_UNIT
    + ")",
    re.I,
)


_AND_A_HALF = re.compile(
    r"\b(\d+|"
    + "|".join(sorted(lx.NUMBER_WORDS, key=len, reverse=True))
    + r")\s+and\s+a\s+half\s+"
    + _TIME_UNIT,
    re.I,
)


def with_digits(text: str, articles: bool = True) -> str:
    """The text with durations spelled in words written in digits ("about two hours" ->
    "about 2 hours", "four and a half hours" -> "4.5 hours"), so that a duration reads the
    same however a person wrote it. `articles`: read "an hour" as one hour too (not where
    rates may be written "per" as "a")."""
    text = _AND_A_HALF.sub(lambda m: f"{_number(m.group(1)) + 0.5:g} {m.group(2)}", text)
    text = _HALF.sub(lambda m: f"0.5 {m.group(1)}", text)
    words = _WORD_NUMBER if articles else _WORD_NUMBER_ONLY
    return words.sub(lambda m: f"{lx.NUMBER_WORDS[m.group(1).lower()]} {m.group(2)}", text)


# How long a step says it runs: "finishes in under 9 s", "takes 40 min", "done within an hour"
# (English verbs of duration and completion).
_RUN_TIME = re.compile(
    r"\b(?:runs?|ran|finish\w*|complet\w*|done|takes?|took|lasts?)\s+(?:in\s+|within\s+|for\s+)?"
    r"(?:about\s+|around\s+|roughly\s+|under\s+|~\s*)?\d+(?:\.\d+)?\s*"
    r"(?:seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\b",
    re.I,
)


def run_times(text: str) -> list[str]:
    """The phrases in which a step says how long it runs. A step that says so needs that
    long; the other durations it names (a query's window of "the past 90 days", a retention
    it reads about) are not time it spends running."""
    return [m.group(0) for m in _RUN_TIME.finditer(with_digits(text))]


def _number(word: str) -> float:
    return float(word) if word.isdigit() else float(lx.NUMBER_WORDS[word.lower()])


@dataclass(frozen=True)
class Moment:
    """A point in one of two frames: `clock` (minutes after midnight) or `offset` (minutes
    after the producing procedure starts)."""

    frame: Literal["clock", "offset"]
    minutes: float


def available_after(value: str) -> Moment | None:
    """A contract's `available_after`: a time of day ("05:40") or a duration ("20m")."""
    if re.fullmatch(r"\d{1,2}:\d{2}", value.strip()):
        at = clock(value)
        return None if at is None else Moment("clock", at)
    minutes = duration(value)
    return None if minutes is None else Moment("offset", minutes)


@dataclass(frozen=True)
class Schedule:
    """When a dependent runs: at a `moment`, or on an event (`event` True)."""

    moment: Moment | None = None
    event: bool = False
    after: str = ""  # the procedure an offset counts from, as written


def schedule(trigger: str) -> Schedule | None:
    """A dependent's schedule from its trigger text; None when it says nothing about time."""
    if not trigger.strip():
        return None
    offset = _OFFSET.search(trigger)
    if offset:
        minutes = duration(offset.group(1))
        if minutes is not None:
            return Schedule(Moment("offset", minutes), after=(offset.group("name") or "").strip())
    if _EVENT_WORDS.search(trigger):
        return Schedule(event=True)
    at = clock(trigger)
    return None if at is None else Schedule(Moment("clock", at))


def later(old: Moment, new: Moment) -> bool:
    return old.frame == new.frame and new.minutes > old.minutes


def misses(old: Moment, new: Moment, deadline: Moment, start: int | None = None) -> bool | None:
    """Whether an output ready at `old` and now at `new` misses a dependent running at
    `deadline` it used to meet. None when the frames cannot be joined (an offset against a
    clock time with the producer's start unknown)."""
    old_at, new_at, due = (_in(m, deadline.frame, start) for m in (old, new, deadline))
    if old_at is None or new_at is None or due is None:
        return None
    return old_at <= due < new_at


def _in(moment: Moment, frame: str, start: int | None) -> float | None:
    if moment.frame == frame:
        return moment.minutes
    if start is None:
        return None
    if frame == "clock":  # an offset after a known start, as a time of day
        return (start + moment.minutes) % 1440
    return (moment.minutes - start) % 1440


# -- time windows --------------------------------------------------------------------------------

_DAYS = {
    name: index
    for index, names in enumerate(
        ("monday mon", "tuesday tue tues", "wednesday wed", "thursday thu thurs", "friday fri",
         "saturday sat", "sunday sun")
    )
    for name in names.split()
}  # fmt: skip
_DAY = re.compile(r"\b(" + "|".join(sorted(_DAYS, key=len, reverse=True)) + r")s?\b", re.I)
_GROUPS = {
    "weekend": {5, 6},
    "weekends": {5, 6},
    "weekday": set(range(5)),
    "weekdays": set(range(5)),
}
_AFTER = re.compile(
    r"\b(?:after|from|past)\s+(\d{1,2}[:.h]\d{2}\s*(?:am|pm)?|\d{1,2}\s*(?:am|pm))", re.I
)
_BEFORE = re.compile(
    r"\b(?:before|until|till)\s+(\d{1,2}[:.h]\d{2}\s*(?:am|pm)?|\d{1,2}\s*(?:am|pm))", re.I
)


@dataclass(frozen=True)
class Window:
    """Days of the week (0 = Monday; empty: every day) and a span of the day in minutes."""

    days: frozenset[int]
    after: int | None = None
    before: int | None = None

    def holds(self, day: int | None, minutes: int | None) -> bool:
        if self.days and (day is None or day not in self.days):
            return False
        if minutes is None:
            return self.after is None and self.before is None
        if self.after is not None and self.before is not None and self.after > self.before:
            return minutes >= self.after or minutes < self.before  # across midnight
        if self.after is not None and minutes < self.after:
            return False
        return self.before is None or minutes < self.before


def days(text: str) -> set[int]:
    found = {_DAYS[m.group(1).lower()] for m in _DAY.finditer(text)}
    for word, group in _GROUPS.items():
        if re.search(rf"\b{word}\b", text, re.I):
            found |= group
    return found


# "between 21:30 and 01:30": both ends of a span of the day.
_BETWEEN = re.compile(
    r"\bbetween\s+(\d{1,2}[:.h]\d{2}\s*(?:am|pm)?|\d{1,2}\s*(?:am|pm))\s+and\s+"
    r"(\d{1,2}[:.h]\d{2}\s*(?:am|pm)?|\d{1,2}\s*(?:am|pm))",
    re.I,
)


def window(text: str) -> Window | None:
    """The days and hours a text speaks of ("on weekends before 09:00", "between 21:30 and
    01:30"); None if none."""
    text = re.sub(r"(\d)\s+:\s+(\d)", r"\1:\2", text)  # "22 : 00" as a tokenizer spaced it
    between = _BETWEEN.search(text)
    if between:
        start, end = clock(between.group(1)), clock(between.group(2))
        return Window(frozenset(days(text)), start, end)
    after, before = _AFTER.search(text), _BEFORE.search(text)
    found = days(text)
    if not found and after is None and before is None:
        return None
    return Window(
        frozenset(found),
        clock(after.group(1)) if after else None,
        clock(before.group(1)) if before else None,
    )


# Times of day English names by a word: a step done "after midnight" runs then.
_NAMED_TIMES = {"midnight": 0, "noon": 720, "midday": 720}
_NAMED_TIME = re.compile(r"\b(?:at|after|past|around|by)\s+(midnight|noon|midday)\b", re.I)


def runs_at(text: str) -> tuple[int | None, int | None] | None:
    """When a schedule says something runs: (day, minutes); None if it says neither."""
    found = days(text)
    at = clock(text)
    if at is None:
        named = _NAMED_TIME.search(text)
        at = _NAMED_TIMES[named.group(1).lower()] if named else None
    if not found and at is None:
        return None
    return (min(found) if len(found) == 1 else None), at


# -- spans of the week ---------------------------------------------------------------------------

# "from Friday 18:00 through Monday", "from Sat to Tue 06:00": English range words.
_SPAN = re.compile(
    rf"\bfrom\s+(?P<a>{_DAY.pattern})(?P<at>[^;,|]{{0,24}}?)\s+"
    rf"(?:through|thru|to|until|till)\s+(?P<b>{_DAY.pattern})(?P<bt>[^;,|]{{0,12}})",
    re.I,
)


def week_spans(text: str) -> list[float]:
    """The spans, in minutes, that a text covers from one day of the week to another: "from
    Friday 18:00 through Monday 06:00" is 60 hours. Without times of day, whole days apart
    (Friday to Monday: three days)."""
    found = []
    for match in _SPAN.finditer(text):
        start, end = _day_index(match["a"]), _day_index(match["b"])
        days = (end - start) % 7 or 7
        at, until = clock(match.group("at")), clock(match.group("bt"))
        minutes = days * 1440.0 + ((until - at) if at is not None and until is not None else 0)
        found.append(minutes)
    return found


def _day_index(word: str) -> int:
    """0 for Monday: the word as `_DAY` matched it ("Fridays" too)."""
    word = word.lower()
    return _DAYS[word] if word in _DAYS else _DAYS[word[:-1]]
