"""Version numbers and constraints: ">=2,<3", ">=1.4", "~=1.2", "^1.2", "1.*" and a bare "5".

A bare version in a constraint matches every version it is a prefix of ("5" accepts 5.0 and
5.3.1), the way a consumer that says "version 5" means the 5 line. Versions compare by their
numeric parts, padded with zeros; a version without numbers only equals itself.
"""

from __future__ import annotations

import re

_CLAUSE = re.compile(r"^\s*(>=|<=|==|!=|~=|>|<|=|\^|~)?\s*(.+?)\s*$")


def numbers(version: str) -> tuple[int, ...]:
    """The numeric parts: "v2.1.3" -> (2, 1, 3); "1.x" -> (1,)."""
    parts = []
    for part in version.strip().lstrip("vV").split("."):
        match = re.match(r"\d+", part)
        if match is None:
            break
        parts.append(int(match.group()))
    return tuple(parts)


def _compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    width = max(len(a), len(b))
    left, right = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (left > right) - (left < right)


def _bump(base: tuple[int, ...], at: int) -> tuple[int, ...]:
    """The first version past a line: (1, 2) at 0 -> (2,)."""
    return (*base[:at], base[at] + 1)


def _clause(version: tuple[int, ...], op: str, bound: str) -> bool:
    wanted = numbers(bound)
    if not wanted:
        return True
    cmp = _compare(version, wanted)
    if op in ("", "=", "=="):
        return version[: len(wanted)] == wanted  # a bare "5" or "1.4": that line
    checks = {
        ">=": cmp >= 0,
        "<=": cmp <= 0,
        ">": cmp > 0,
        "<": cmp < 0,
        "!=": cmp != 0,
        "~=": cmp >= 0 and _compare(version, _bump(wanted, max(0, len(wanted) - 2))) < 0,
        "^": cmp >= 0 and _compare(version, _bump(wanted, 0)) < 0,
        "~": cmp >= 0 and _compare(version, _bump(wanted, min(1, len(wanted) - 1))) < 0,
    }
    return checks[op]


def satisfies(version: str, constraint: str) -> bool:
    """Whether `version` meets every comma-separated clause of `constraint`."""
    have = numbers(version)
    if not have:
        return version.strip().lower() == constraint.strip().lower()
    for clause in constraint.split(","):
        match = _CLAUSE.match(clause)
        if match is None or not match.group(2):
            continue
        if not _clause(have, match.group(1) or "", match.group(2)):
            return False
    return True


def major(version: str) -> int | None:
    found = numbers(version)
    return found[0] if found else None
