"""A delimited file whose field separator changed, against a dependent that reads it with the
old one.

A revision that writes `;`-separated rows where it wrote commas breaks every reader that
splits on commas, however the reader says so: naming the comma ("sep=','", "comma-separated")
or relying on a CSV reader's default, which is the comma (RFC 4180). A reader that names the
new separator, or says nothing of separators, is not judged here.

The separators are the four in common use for delimited text, each by its character and its
English names.
"""

from __future__ import annotations

import re

from memproc.gate import sequence
from memproc.gate.facts import Facts
from memproc.gate.model import Finding

SEPARATORS = {
    ",": ("comma", "commas"),
    ";": ("semicolon", "semicolons", "semi-colon"),
    "\t": ("tab", "tabs", "tsv"),
    "|": ("pipe", "pipes"),
}
_NAMED = {name: char for char, names in SEPARATORS.items() for name in names}
_WORDS = "|".join(sorted(_NAMED, key=len, reverse=True))
# "comma-separated", "semicolon delimited", "tab-delimited"
_COMPOUND = re.compile(rf"\b({_WORDS})[\s-]+(?:separated|delimited)\b", re.I)
# "';' as separator", "delimiter ';'", "sep=','", "split on commas", "separated by a pipe"
_QUOTED = r"""['"](,|;|\\t|\t|\|)['"]"""
_SETTING = re.compile(
    rf"(?:\b(?:sep|delimiter|separator|delim|fs)\s*[=:]\s*{_QUOTED})"
    rf"|(?:{_QUOTED}\s+as\s+(?:the\s+)?(?:field\s+)?(?:separator|delimiter))"
    rf"|(?:\b(?:separator|delimiter)\s+{_QUOTED})",
    re.I,
)
_SPLIT = re.compile(
    rf"\b(?:split\w*|separated|delimited)\s+(?:on|by|at|with)\s+(?:an?\s+)?({_WORDS})\b", re.I
)
# A reader left at its default separator: the comma of RFC 4180 CSV.
_DEFAULT = re.compile(r"\bdefault\s+(?:sep\w*|delimiter|separator|delim)\b", re.I)


def separator(text: str) -> str | None:
    """The field separator a text states for delimited rows, or None."""
    for pattern in (_SETTING, _COMPOUND, _SPLIT):
        match = pattern.search(text)
        if match:
            said = next(g for g in match.groups() if g)
            said = "\t" if said == "\\t" else said
            return _NAMED.get(said.lower(), said)
    return "," if _DEFAULT.search(text) else None


def changed_separators(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """The revision's rows now use another separator; a step of the dependent reads them with
    the old one."""
    for i, j in sorted(sequence.pair(old.procedure, revision.procedure).pairs.items()):
        before = separator(old.procedure.steps[i].text)
        after = separator(revision.procedure.steps[j].text)
        if before is None or after is None or before == after:
            continue
        for source, text in dependent.texts:
            if source.startswith("step") and separator(text) == before:
                detail = (
                    f"the revision writes rows separated by {_name(after)} where they were "
                    f"separated by {_name(before)} (step {j + 1}); the dependent reads them "
                    f"with {_name(before)} ({source})"
                )
                evidence = {"old": _name(before), "new": _name(after), "dependent": text}
                return [Finding(dependent.procedure.id, "changed_format", detail, evidence)]
    return []


def _name(char: str) -> str:
    return SEPARATORS[char][0] if char in SEPARATORS else repr(char)
