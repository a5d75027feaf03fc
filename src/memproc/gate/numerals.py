"""English cardinal numbers written in words ("seven thousand and twelve", "forty-five").

The words are the closed class of English cardinals: the units and teens, the tens, and the
multipliers hundred, thousand and million. A number is read from the longest run of them
("one hundred and twenty" is 120); "a" and "an" count only before a multiplier ("a thousand").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_SMALL = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60,
    "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
_MULTIPLIERS = {"hundred": 100, "thousand": 1_000, "million": 1_000_000}
_WORD = "|".join(sorted([*_SMALL, *_MULTIPLIERS], key=len, reverse=True))
_RUN = re.compile(
    rf"\b(?:(?:a|an|one)\s+(?=(?:hundred|thousand|million)\b))?(?:{_WORD})"
    rf"(?:(?:\s+and\s+|\s+|-)(?:{_WORD}))*\b",
    re.I,
)


@dataclass(frozen=True)
class Numeral:
    value: float
    start: int
    end: int


def spelled(text: str) -> list[Numeral]:
    """Every number written in words in `text`, with where it stands."""
    found = []
    for match in _RUN.finditer(text):
        value = _value(re.split(r"[\s-]+", match.group(0).lower()))
        if value is not None:
            found.append(Numeral(value, match.start(), match.end()))
    return found


def _value(words: list[str]) -> float | None:
    """The number a run of number words names; None when it names none ("hundred" alone)."""
    total, current, seen = 0, 0, False
    for word in words:
        if word == "and":
            continue
        if word in ("a", "an"):  # "a thousand": one of the multiplier that follows
            current = current or 1
            continue
        if word in _SMALL:
            current += _SMALL[word]
            seen = True
        elif word == "hundred":
            current = max(current, 1) * 100
        else:  # thousand, million: close the group read so far
            total += max(current, 1) * _MULTIPLIERS[word]
            current = 0
    return float(total + current) if seen or total else None
