"""Settings and their values, read from step text, and what changed between two versions.

A setting is a key with a value, in the forms configuration and command lines use:
`key: value`, `key = value`, `key=value`, `pkg==1.2.3`, `--flag value`, `--flag=value`,
`image:tag`, and a name directly followed by a number ("apiLevel 31", "Ruby 3.2").
Keys are compared normalized (lowercase, `-` and `_` alike), so the same setting is found on
both sides however a revision rewords the step around it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memproc.gate import lexicon as lx
from memproc.gate.identifiers import split_words
from memproc.gate.model import Procedure

# Every pattern starts at the start of a token (a lookbehind), so a long run of word
# characters is scanned once, not once per position.
_KEY_VALUE = re.compile(
    r"(?<![\w.\-/$])(?P<key>[A-Za-z_$][\w.\-/$]*(?:[ \t][A-Za-z][\w\-]*){0,2})\s*"
    r"(?P<op>==|=|:(?=\s))\s*(?P<value>[^\s].*)$"
)
_FLAG = re.compile(r"(?<![\w-])(?P<key>--?[A-Za-z][\w-]*)(?:=|\s+)(?P<value>[^\s-][^\s]*)")
_IMAGE = re.compile(
    r"(?<![\w./:-])(?P<key>[a-z0-9][\w./-]*[a-z0-9]):(?P<value>[\w][\w.-]*)(?![\w/:])"
)
# `pkg@1.2.3`: how npm, pip (`pkg @ 1.2`), Arduino cores and many pin files name a version.
# An address (`deploy@10.0.0.5`) is no version.
_AT_VERSION = re.compile(
    r"(?<![\w./:@-])(?P<key>[A-Za-z][\w./:-]*[\w])\s?@\s?(?P<value>v?\d+(?:\.\d+){0,2}[\w.+-]*)"
    r"(?![\w@])"
)
# A one-letter option with its value attached, as POSIX utility syntax allows (`-A3`, `-j8`).
_ATTACHED = re.compile(r"(-[A-Za-z])(\d+)")
_ADDRESS = re.compile(r"^\d+\.\d+\.\d+\.\d+")
# Several `key = value` settings on one line ("host = db1 port = 6379 timeout = 5"):
# each value is one word, up to the next key.
_PAIRS = re.compile(r"(?<![\w.\-/$])(?P<key>[A-Za-z_][\w.\-]*)\s*=\s*(?P<value>[^\s=]+)(?=\s|$)")
# A time of day after a word ("Friday 23:30") is a schedule, not a value.
_NAME_NUMBER = re.compile(
    r"(?<![\w./-])(?P<key>[A-Za-z][A-Za-z0-9_-]*)\s+(?P<value>v?\d[\w.%]*)(?![\w])(?!:\d\d)"
)
# Values that say nothing by themselves: a changed "true" is read through its key only.
_PLAIN_VALUES = lx.words("true false yes no on off enabled disabled none null")


@dataclass(frozen=True)
class Setting:
    key: str  # normalized
    value: str
    where: str  # "step 2", "output 1"
    text: str  # the segment it was read from
    name: str = ""  # the key as written ("maxWorkers"), for its words

    @property
    def words(self) -> list[str]:
        return split_words(self.name or self.key)


@dataclass(frozen=True)
class Change:
    key: str
    old: str
    new: str
    where: str
    old_text: str
    new_text: str
    name: str = ""

    @property
    def words(self) -> list[str]:
        return split_words(self.name or self.key)


def normalize_key(key: str) -> str:
    return re.sub(r"[\s_-]+", "_", key.strip().strip("'\"`").lower()).strip("_")


def segments(text: str) -> list[str]:
    """Text cut at `,` `;` `|` and line ends outside brackets and quotes."""
    parts: list[str] = []
    current: list[str] = []
    depth, quote = 0, ""
    for char in text:
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(0, depth - 1)
        elif char in ",;|\n" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


# A time of day ("06:00"): read as one value, never as a key "06" set to "00".
_CLOCK = re.compile(r"(?<![\w:.])([01]?\d|2[0-3]):([0-5]\d)(?![\w:.])")


def settings_of_text(text: str, where: str) -> list[Setting]:
    found: list[Setting] = []
    text = _CLOCK.sub(lambda m: f"{m.group(1)}h{m.group(2)}", text)
    for segment in segments(text):
        found += _read_segment(segment, where)
    return found


def _read_segment(segment: str, where: str) -> list[Setting]:
    found = []
    for match in _FLAG.finditer(segment):
        key, value = match["key"], match["value"]
        attached = _ATTACHED.fullmatch(key)
        if attached:  # `-A3 'api'`: 3 is the option's value, 'api' an operand
            key, value = attached.groups()
        found.append(Setting(normalize_key(key), _clean(value), where, segment, key))
        if "=" in value:  # `--set-config cache.size=512m`: the option carries a setting
            found += _read_segment(value, where)
    pairs = list(_PAIRS.finditer(segment))
    if len(pairs) >= 2 and not segment.lstrip().startswith("-"):
        for match in pairs:
            key = match["key"]
            found.append(Setting(normalize_key(key), _clean(match["value"]), where, segment, key))
        pair = None
    else:
        pair = _KEY_VALUE.search(segment)
    if pair and not segment.lstrip().startswith("-"):
        # "key: value" may have a key of words ("delete after: 30d"); "key=value" has one name
        key = _last_words(pair["key"]) if pair["op"] == ":" else pair["key"].split()[-1]
        if key and key.split()[-1].lower() not in lx.STOPWORDS:
            value = _clean(pair["value"])
            found.append(Setting(normalize_key(key), value, where, segment, key))
        if pair["op"] == ":" and (  # "group-a: max_conn = 50", "server: port: 80": the inner one
            "=" in pair["value"] or _INNER_KEY.match(pair["value"])
        ):
            found += _read_segment(pair["value"], where)
    for match in _IMAGE.finditer(segment):
        if "://" not in segment[max(0, match.start() - 8) : match.end() + 3]:
            name = match["key"]
            found.append(Setting(normalize_key(name), match["value"], where, segment, name))
    for match in _AT_VERSION.finditer(segment):
        if not _ADDRESS.match(match["value"]):
            name = match["key"]
            found.append(Setting(normalize_key(name), match["value"], where, segment, name))
    for match in _NAME_NUMBER.finditer(segment):
        key = match["key"]
        if key.lower() not in lx.STOPWORDS and key.lower() not in lx.NUMBER_CONTEXT:
            value = match["value"].lower()
            found.append(Setting(normalize_key(key), value, where, segment, key))
    return found


def _last_words(key: str) -> str:
    """At most the last three words before `:` or `=`: the key, not the sentence."""
    words = key.split()
    return " ".join(words[-3:])


# A value that is itself a `key: value` setting, as nested YAML written on one line.
_INNER_KEY = re.compile(r"[A-Za-z_][\w.-]*:\s")
# A quoted value: the quotes end it (`job="api"} > 0` has the value api).
_QUOTED = re.compile(r"""(['"`])([^'"`]*)\1""")


def _clean(value: str) -> str:
    quoted = _QUOTED.match(value.strip())
    if quoted:
        return quoted.group(2).strip().lower()
    value = value.split(" #", 1)[0].strip().strip("'\"`").strip()
    return value.lower()


def settings(procedure: Procedure) -> list[Setting]:
    found = []
    for number, step in enumerate(procedure.steps, start=1):
        found += settings_of_text(step.action, f"step {number}")
        found += settings_of_text(step.detail, f"step {number}")
    return found


def changed(old: Procedure, revision: Procedure) -> list[Change]:
    """Settings present on both sides whose value differs (first differing occurrence)."""
    before, after = _by_key(settings(old)), _by_key(settings(revision))
    found = []
    for key in before.keys() & after.keys():
        old_values = [s.value for s in before[key]]
        new_values = [s.value for s in after[key]]
        if old_values == new_values:
            continue
        pairs = [
            (a, b) for a, b in zip(before[key], after[key], strict=False) if a.value != b.value
        ]
        if not pairs:
            continue
        a, b = pairs[0]
        found.append(Change(key, a.value, b.value, b.where, a.text, b.text, b.name))
    return sorted(found, key=lambda c: (c.where, c.key))


def _by_key(found: list[Setting]) -> dict[str, list[Setting]]:
    grouped: dict[str, list[Setting]] = {}
    for setting in found:
        grouped.setdefault(setting.key, []).append(setting)
    return grouped


# How configuration formats spell a boolean (YAML 1.1, INI files, systemd units).
_TRUE = lx.words("true yes on enabled enable 1 required require")
_FALSE = lx.words("false no off disabled disable 0 none")


def truth(value: str) -> bool | None:
    """A value read as a boolean, however the format spells it; None if it is not one. A
    remark after the value ("1 (since March)", "off # for now") is not part of it."""
    words = re.split(r"\s+[#(]|\s+--\s", value.strip(), maxsplit=1)
    word = words[0].strip().strip("'\"`").lower()
    return True if word in _TRUE else False if word in _FALSE else None


def same_value(a: str, b: str) -> bool:
    """Equal values, booleans compared by meaning ("No" and "off")."""
    if a.strip().lower() == b.strip().lower():
        return True
    ta, tb = truth(a), truth(b)
    return ta is not None and ta == tb


def distinctive(value: str) -> bool:
    """A value specific enough that naming it means relying on it: not a boolean or a small
    number, at least two characters."""
    value = value.strip().lower()
    return len(value) >= 2 and value not in _PLAIN_VALUES and not value.isdigit()
