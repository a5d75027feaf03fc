"""Path templates: the placeholders in a path or URL, named the same however they are spelled.

Procedures write one layout many ways: `{tenant}`, `${TENANT}`, `<tenant>`, `:tenant`, and
for dates either a template name (`{yyyy}`) or a shell command substitution that formats the
date (`$(date +%Y)`). Identifiers compare placeholders as wildcards ("the same location"), which
cannot see a layout whose placeholders changed order. This module gives each placeholder a
canonical field name so two layouts, and a dependent's path, can be compared position by
position.

Canonical names are case-folded with their brackets stripped. Date fields have one name each:

- strftime conversion codes, as POSIX `date` and C `strftime` define them: `%Y`/`%y`/`%C`
  year, `%m`/`%b`/`%B`/`%h` month, `%d`/`%e` day, `%j` day of the year, `%H`/`%I` hour,
  `%M` minute, `%S` second, `%U`/`%W`/`%V` week, `%a`/`%A`/`%u`/`%w` weekday, `%F` date,
  `%s` epoch;
- the date-pattern letters of Unicode LDML (Java's DateTimeFormatter, ICU), case-folded
  as template names are written (`yyyy`, `mm`, `dd`, `hh`), and the English field names.
  A case-folded `mm` is read as the month: in a path after a year that is what it names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from fnmatch import fnmatchcase

# POSIX `date` / C `strftime` conversion codes -> the field they format.
_STRFTIME = {
    "Y": "year",
    "y": "year",
    "C": "year",
    "G": "year",
    "m": "month",
    "b": "month",
    "B": "month",
    "h": "month",
    "d": "day",
    "e": "day",
    "j": "day_of_year",
    "H": "hour",
    "I": "hour",
    "k": "hour",
    "l": "hour",
    "M": "minute",
    "S": "second",
    "U": "week",
    "W": "week",
    "V": "week",
    "a": "weekday",
    "A": "weekday",
    "u": "weekday",
    "w": "weekday",
    "F": "date",
    "D": "date",
    "s": "epoch",
}
# Template names of date fields: LDML pattern letters (case-folded) and English names.
_DATE_NAMES = {
    "yyyy": "year",
    "yy": "year",
    "year": "year",
    "mm": "month",
    "month": "month",
    "dd": "day",
    "day": "day",
    "hh": "hour",
    "hour": "hour",
    "minute": "minute",
    "ss": "second",
    "second": "second",
}
DATE_FIELDS = frozenset(_STRFTIME.values())
# What a literal segment must look like to stand for a date field.
_SHAPES = {
    "year": re.compile(r"\d{4}|\d{2}"),
    "month": re.compile(r"0?[1-9]|1[0-2]|[a-z]{3,9}", re.I),
    "day": re.compile(r"0?[1-9]|[12]\d|3[01]"),
    "hour": re.compile(r"[01]?\d|2[0-3]"),
    "minute": re.compile(r"[0-5]?\d"),
    "second": re.compile(r"[0-5]?\d"),
    "date": re.compile(r"\d{4}-?\d{2}-?\d{2}"),
}

# `$(command ...)`: a shell command substitution (POSIX sh); not nested.
COMMAND = re.compile(r"\$\(([^()]*)\)")
_DATE_FORMAT = re.compile(r"""\+(['"]?)([^'"\s]+)\1""")
_PLACEHOLDER = re.compile(r"\{([^{}/]*)\}|<([^<>/]*)>|^:([A-Za-z_]\w*)|\$\{?([A-Za-z_]\w*)\}?")
_URL = re.compile(r"^([a-z][\w+.-]*:(?:[\w+.-]*:)?//[^/]*)(.*)$", re.I)


def field(name: str) -> str:
    """A placeholder's canonical name: `${TENANT}` -> tenant, `{yyyy}` -> year, `%m` -> month."""
    if re.fullmatch(r"%[A-Za-z]", name):
        return _STRFTIME.get(name[1], name[1])
    bare = name.strip("{}<>$:").strip().casefold()
    return _DATE_NAMES.get(bare, bare)


def expand_command(command: str) -> str:
    """A command substitution as placeholders: `date +%Y/%m` -> `{year}/{month}`; any other
    command -> `{its name}` (its output is one value of the path)."""
    words = command.split()
    if not words:
        return "{}"
    if words[0] == "date":
        fmt = _DATE_FORMAT.search(command)
        if fmt:
            return re.sub(r"%[A-Za-z]", lambda m: "{" + field(m.group()) + "}", fmt.group(2))
        return "{date}"
    return "{" + words[0].rsplit("/", 1)[-1].casefold() + "}"


@dataclass(frozen=True)
class Segment:
    """One segment of a path: its text with each placeholder as `*`, and their fields."""

    pattern: str
    fields: tuple[str, ...] = ()


def segments(path: str, *, host: bool = True) -> tuple[Segment, ...]:
    """A path's segments, placeholders named; a URL's scheme and host are its first segment
    (left out with `host=False`, to set a URL beside a bare path)."""
    url = _URL.match(path.strip())
    head, rest = (url.group(1), url.group(2)) if url else ("", path.strip())
    found = [Segment(head.casefold())] if head and host else []
    for part in (p for p in rest.split("/") if p and p != "."):
        names = tuple(
            field(next(g for g in m.groups() if g is not None)) for m in _PLACEHOLDER.finditer(part)
        )
        found.append(Segment(_PLACEHOLDER.sub("*", part).casefold(), names))
    return tuple(found)


def fields(path: str) -> tuple[str, ...]:
    """The placeholders of a path, in order."""
    return tuple(f for s in segments(path) for f in s.fields)


def reordered(before: str, after: str) -> bool:
    """The same placeholders in another order: the layout of the files changed."""
    old, new = fields(before), fields(after)
    return old != new and sorted(old) == sorted(new)


def follows(path: tuple[Segment, ...], layout: tuple[Segment, ...]) -> bool | None:
    """Whether a path (a dependent's, with its own placeholders or literal values) follows a
    layout, over the segments both have: True when every segment fits, False when one
    cannot, None when a placeholder of the path cannot be told to be the layout's."""
    own = {f for s in layout for f in s.fields}
    verdicts = [_fits(a, b, own) for a, b in zip(path, layout, strict=False)]
    if False in verdicts:
        return False
    return None if None in verdicts else True


def _fits(segment: Segment, slot: Segment, own: set[str]) -> bool | None:
    if not segment.fields and not slot.fields:
        return segment.pattern == slot.pattern
    if not slot.fields:  # a placeholder of the path where the layout has a literal
        return fnmatchcase(slot.pattern, segment.pattern) and _shaped(slot.pattern, segment)
    if not segment.fields:  # a literal value where the layout has a placeholder
        return fnmatchcase(segment.pattern, slot.pattern) and _shaped(segment.pattern, slot)
    if segment.pattern != slot.pattern or len(segment.fields) != len(slot.fields):
        return None
    verdicts = [_same_field(a, b, own) for a, b in zip(segment.fields, slot.fields, strict=True)]
    return False if False in verdicts else (None if None in verdicts else True)


def _same_field(mine: str, theirs: str, own: set[str]) -> bool | None:
    """Two placeholders at one position: the same field, or certainly not (the path's field
    is another field of the same layout, or both are different date fields)."""
    if mine == theirs:
        return True
    if mine in own or (mine in DATE_FIELDS and theirs in DATE_FIELDS):
        return False
    return None


def _shaped(literal: str, slot: Segment) -> bool:
    """A literal can stand for the slot's one date field only in that field's shape."""
    if slot.pattern != "*" or len(slot.fields) != 1 or slot.fields[0] not in _SHAPES:
        return True
    return bool(_SHAPES[slot.fields[0]].fullmatch(literal))
