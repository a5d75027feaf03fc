"""Time awareness: the span of time a query asks about, read from its own words.

"What did I fix last weekend?" asks about a span relative to the moment of asking (`now`);
a memory whose event time (`occurred_at`, else `created_at`) lies in that span should rank
above an equally relevant one that does not. This module only reads English expressions of
relative time and names of weekdays and months; it returns None for anything else, and the
search then ranks exactly as without it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

DAY = timedelta(days=1)
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
MONTHS = (
    "january", "february", "march", "april", "may", "june", "july",
    "august", "september", "october", "november", "december",
)  # fmt: skip
NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "couple": 2, "few": 3, "several": 3,
}  # fmt: skip
UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUMBER = r"(\d{1,3}|" + "|".join(NUMBERS) + r")"
_UNIT = r"(day|week|month|year)s?"


@dataclass(frozen=True)
class TimeFrame:
    start: datetime
    end: datetime
    phrase: str

    def contains(self, moment: datetime) -> bool:
        return self.start <= moment < self.end

    def distance(self, moment: datetime) -> timedelta:
        """Zero inside the frame, else how far outside it."""
        if moment < self.start:
            return self.start - moment
        if moment >= self.end:
            return moment - self.end
        return timedelta(0)


def find_timeframe(query: str, now: datetime) -> TimeFrame | None:
    """The first time expression in `query`, as a span ending no later than `now`."""
    text = query.lower()
    for reader in _READERS:
        frame = reader(text, now)
        if frame is not None:
            return frame
    return None


def _midnight(moment: datetime) -> datetime:
    return moment.replace(hour=0, minute=0, second=0, microsecond=0)


def _amount(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS[word]


def _within_last(text: str, now: datetime) -> TimeFrame | None:
    """'in the last four months', 'over the past 3 weeks', 'past two days'."""
    match = re.search(rf"\b(?:last|past)\s+(?:{_NUMBER}\s+)?{_UNIT}\b", text)
    if match is None:
        return None
    count = _amount(match.group(1)) if match.group(1) else 1
    span = timedelta(days=count * UNIT_DAYS[match.group(2)])
    if match.group(2) == "week" and not match.group(1) and "last week" in match.group(0):
        span = 2 * span  # "last week" is the previous calendar week: look back up to 14 days
    return TimeFrame(_midnight(now - span), now, match.group(0))


def _ago(text: str, now: datetime) -> TimeFrame | None:
    """'two weeks ago', '3 days ago', 'a month ago': a window around that moment."""
    match = re.search(rf"\b{_NUMBER}\s+(?:of\s+)?{_UNIT}\s+ago\b", text)
    if match is None:
        return None
    unit_days = UNIT_DAYS[match.group(2)]
    target = now - timedelta(days=_amount(match.group(1)) * unit_days)
    half = timedelta(days=max(1.0, unit_days / 2))
    return TimeFrame(
        _midnight(target - half), min(now, _midnight(target + half) + DAY), match.group(0)
    )


def _named_day(text: str, now: datetime) -> TimeFrame | None:
    """'yesterday', 'today', 'this morning', 'tonight'."""
    match = re.search(r"\b(yesterday|today|tonight|this (?:morning|afternoon|evening))\b", text)
    if match is None:
        return None
    day = _midnight(now) - (DAY if match.group(1) == "yesterday" else timedelta(0))
    return TimeFrame(day, day + DAY, match.group(0))


def _weekend(text: str, now: datetime) -> TimeFrame | None:
    """'last weekend', 'the past weekend', 'this weekend': the most recent Saturday-Sunday."""
    match = re.search(r"\b(?:last|past|this|previous)\s+weekend\b", text)
    if match is None:
        return None
    days_since_saturday = (now.weekday() - 5) % 7
    saturday = _midnight(now) - timedelta(days=days_since_saturday)
    if "this" not in match.group(0) and days_since_saturday < 2:
        saturday -= timedelta(days=7)  # said during a weekend, "last weekend" is the one before
    return TimeFrame(saturday, min(now, saturday + 2 * DAY), match.group(0))


def _weekday(text: str, now: datetime) -> TimeFrame | None:
    """'last Tuesday', 'on Friday': the most recent such day before today."""
    match = re.search(r"\b(?:last|on|this past|past)\s+(" + "|".join(WEEKDAYS) + r")\b", text)
    if match is None:
        return None
    back = (now.weekday() - WEEKDAYS.index(match.group(1))) % 7 or 7
    day = _midnight(now) - timedelta(days=back)
    return TimeFrame(day, day + DAY, match.group(0))


def _this_period(text: str, now: datetime) -> TimeFrame | None:
    """'this week', 'this month', 'this year': from the period's start until now."""
    match = re.search(r"\bthis\s+(week|month|year)\b", text)
    if match is None:
        return None
    today = _midnight(now)
    start = {
        "week": today - timedelta(days=now.weekday()),
        "month": today.replace(day=1),
        "year": today.replace(month=1, day=1),
    }[match.group(1)]
    return TimeFrame(start, now, match.group(0))


def _month(text: str, now: datetime) -> TimeFrame | None:
    """'in March', 'last April', 'during May': the latest such month not after now."""
    match = re.search(
        r"\b(?:in|during|last|since|early|late|mid)\s+(" + "|".join(MONTHS) + r")\b", text
    )
    if match is None:
        return None
    month = MONTHS.index(match.group(1)) + 1
    year = now.year if month <= now.month else now.year - 1
    start = _midnight(now).replace(year=year, month=month, day=1)
    end = start.replace(year=year + 1, month=1) if month == 12 else start.replace(month=month + 1)
    return TimeFrame(start, min(end, now), match.group(0))


_READERS = (_named_day, _weekend, _weekday, _ago, _within_last, _this_period, _month)
