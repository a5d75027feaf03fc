"""Quantities in step text and settings, normalized: durations to seconds, sizes to bytes,
rates to events per second, and bare counts.

Sources of the units: the SI second and its customary multiples (minute, hour, day, week;
month and year as 30 and 365 days), SI decimal prefixes for bytes (kB, MB, GB, TB) and the IEC
80000-13 binary prefixes (KiB, MiB, GiB, TiB, and the Ki/Mi/Gi/Ti spellings Kubernetes uses,
as well as the JVM's k/m/g for memory settings). Compact forms ("45s", "3m", "12d", "2Gi",
"6g"), ranges ("10 to 20 minutes", "0..250MB": each end counts), rates ("20 jobs/min",
"15 uploads a second", "2k qps") and a period noun with no number ("the last quarter") are
read. A lone "m" is minutes unless the setting is about memory or size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memproc.gate.lexicon import words

SECONDS = {
    "ms": 0.001, "msec": 0.001, "millisecond": 0.001,
    "s": 1.0, "sec": 1.0, "secs": 1.0, "second": 1.0,
    "m": 60.0, "min": 60.0, "mins": 60.0, "minute": 60.0,
    "h": 3600.0, "hr": 3600.0, "hrs": 3600.0, "hour": 3600.0,
    "d": 86400.0, "day": 86400.0,
    "w": 604800.0, "wk": 604800.0, "week": 604800.0,
    "month": 2592000.0, "mo": 2592000.0, "quarter": 7776000.0,
    "y": 31536000.0, "yr": 31536000.0, "year": 31536000.0,
}  # fmt: skip
BYTES = {
    "b": 1.0, "byte": 1.0, "bytes": 1.0,
    "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
    "kib": 1024.0, "mib": 1024.0**2, "gib": 1024.0**3, "tib": 1024.0**4,
    "ki": 1024.0, "mi": 1024.0**2, "gi": 1024.0**3, "ti": 1024.0**4,
    "k": 1024.0, "g": 1024.0**3, "t": 1024.0**4,
}  # fmt: skip
# SI metre and its customary multiples, and the inch and foot (international yard, 1959).
METRES = {
    "mm": 0.001, "millimetre": 0.001, "millimeter": 0.001,
    "cm": 0.01, "centimetre": 0.01, "centimeter": 0.01,
    "m": 1.0, "metre": 1.0, "meter": 1.0,
    "km": 1000.0, "kilometre": 1000.0, "kilometer": 1000.0,
    "in": 0.0254, "inch": 0.0254, "inches": 0.0254,
    "ft": 0.3048, "foot": 0.3048, "feet": 0.3048,
}  # fmt: skip
# Words that say a quantity is a length (general vocabulary); "m" is then metres.
LENGTH_WORDS = words("height high tall width wide length long depth deep distance clearance")
# The JVM's memory options, `-Xmx8g` (the heap's maximum), `-Xms512m`, `-Xmn1g`.
_JVM_MEMORY = re.compile(r"(?<![\w-])-Xm[xsn](\d+)([kKmMgGtT])\b")
# The JVM and Spark spell memory with one letter; "m" is then MiB, not minutes.
_MEMORY_M = 1024.0**2
# Words that say a setting is about memory or storage size (general vocabulary).
SIZE_WORDS = words("memory mem heap ram size disk storage volume capacity buffer")
# Adverbs standing for a period: "the sync runs weekly".
PERIOD_ADVERBS = {
    "hourly": 3600.0,
    "daily": 86400.0,
    "nightly": 86400.0,
    "weekly": 604800.0,
    "monthly": 2592000.0,
}
_RATE_UNITS = {"rps": 1.0, "qps": 1.0, "rpm": 1 / 60.0, "rph": 1 / 3600.0}
_MULTIPLIERS = {"k": 1e3, "m": 1e6}

_NUMBER = r"(\d+(?:[.,]\d+)?)(k)?"
_QUANTITY = re.compile(
    _NUMBER + r"(?:\s*(?:-|to|\.\.|–)\s*" + _NUMBER + r")?"
    r"(?:\s*(?!(?:per|a|an|every|each)\b)([A-Za-z]+))?"
    r"(?:\s*(?:/|per|a|an|every|each)\s*(second|sec|s|minute|min|m|hour|hr|h|day|d))?(?![\w])",
    re.I,
)
_PERIOD = re.compile(
    r"\b(?:previous|past|last|prior|whole|entire|full|per|each|every|a|one)\s+"
    r"(?:calendar\s+|business\s+)?(day|week|month|quarter|year)\b",
    re.I,
)


# A rate set under its period as the key, as rate-limiting plugins spell it ("minute = 100",
# "second: 20"): so many per that period.
_PER_UNIT_SETTING = re.compile(r"\b(second|minute|hour|day)\s*[:=]\s*(\d+)\b", re.I)
# A count of periods with a word of time between ("the 3 previous months", "12 trailing
# weeks"): English adjectives of a stretch of time.
_SPAN = re.compile(
    r"\b(\d+)\s+(?:previous|past|last|preceding|prior|trailing|full|whole|calendar)\s+"
    r"(days?|weeks?|months?|quarters?|years?)\b",
    re.I,
)


@dataclass(frozen=True)
class Quantity:
    """`dimension` is time, size, rate or count; `value` in seconds, bytes, events/second."""

    dimension: str
    value: float
    text: str


def _float(text: str, thousands: str | None) -> float:
    value = (
        float(text.replace(",", ""))
        if "," in text and "." not in text
        else float(text.replace(",", "."))
    )
    return value * (_MULTIPLIERS[thousands.lower()] if thousands else 1.0)


def unit(word: str, *, memory: bool = False, length: bool = False) -> tuple[str, float] | None:
    """(dimension, factor) of a unit word, plural or not; `length`: the text is about a
    length, so "m" is metres."""
    word = word.lower()
    if memory and word == "m":
        return "size", _MEMORY_M
    if length:
        for candidate in (word, word[:-1] if word.endswith("s") and len(word) > 2 else word):
            if candidate in METRES:
                return "length", METRES[candidate]
    for candidate in (word, word[:-1] if word.endswith("s") and len(word) > 2 else word):
        if candidate in SECONDS:
            return "time", SECONDS[candidate]
        if candidate in BYTES and (memory or candidate not in ("k", "g", "t")):
            return "size", BYTES[candidate]
    return None


def scan(text: str, *, memory: bool = False, length: bool = False) -> list[Quantity]:
    """Every quantity in `text`; a range gives both ends. `length`: read "m" as metres."""
    found: list[Quantity] = []
    for match in _JVM_MEMORY.finditer(text):
        factor = BYTES[match.group(2).lower()] if match.group(2).lower() != "m" else _MEMORY_M
        found.append(Quantity("size", float(match.group(1)) * factor, match.group(0)))
    for match in _QUANTITY.finditer(text):
        if _inside_word(text, match.start()):
            continue
        read = _read(match, memory, length)
        if re.search(r"\b(?:every|each)\s*$", text[: match.start()], re.I):
            read = [Quantity("period", q.value, q.text) for q in read]  # a schedule
        found += read
    for match in _PER_UNIT_SETTING.finditer(text):
        seconds = SECONDS[match.group(1).lower()]
        found.append(Quantity("rate", float(match.group(2)) / seconds, match.group(0)))
    for match in _SPAN.finditer(text):
        spanned = unit(match.group(2))
        if spanned is not None and spanned[0] == "time":
            found.append(Quantity("time", float(match.group(1)) * spanned[1], match.group(0)))
    for match in _PERIOD.finditer(text):
        word = match.group(1).lower()
        found.append(Quantity("time", SECONDS[word], match.group(0)))
    for word, seconds in PERIOD_ADVERBS.items():
        if re.search(rf"\b{word}\b", text, re.I):
            found.append(Quantity("period", seconds, word))
    return found


def _inside_word(text: str, start: int) -> bool:
    """A digit inside an identifier ("s3", "v1beta1", "x86"): not a quantity."""
    return start > 0 and (text[start - 1].isalpha() or text[start - 1] in "_.$-:/")


def _read(match: re.Match[str], memory: bool, length: bool = False) -> list[Quantity]:
    first, first_k, second, second_k, word, per = match.groups()
    numbers = [_float(first, first_k)] + ([_float(second, second_k)] if second else [])
    text = match.group(0).strip()
    if word and word.lower() in _RATE_UNITS:
        return [Quantity("rate", n * _RATE_UNITS[word.lower()], text) for n in numbers]
    if per:
        per_unit = unit(per)
        seconds = per_unit[1] if per_unit else 1.0
        return [Quantity("rate", n / seconds, text) for n in numbers]
    measured = unit(word, memory=memory, length=length) if word else None
    if measured is not None:
        return [Quantity(measured[0], n * measured[1], text) for n in numbers]
    return [Quantity("count", n, text) for n in numbers]
