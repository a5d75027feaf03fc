"""Identifiers in step text: the names by which procedures share resources.

Entities and prose miss most links between real procedures: they share `ledger.entries`,
`shipment_id`, `maxWorkers`, `pool_size = 40`, the host inside
`amqp://jobs@queue-2.internal:5672/`, or `gs://media/{day}/thumbs/`. This module finds such
names by their shape alone (no word lists): URLs and the hosts in them, paths (with
`{placeholders}`, `:params`, `<vars>` and `$VARS` read as wildcards), globs (`audit-*`
matches `audit-2024`), dotted names, snake_case, camelCase and PascalCase (a PascalCase
word may also be a brand), kebab-case names holding a digit and Header-Case names,
environment variables, flags, `key=value` keys, image names, and the members of a brace list
(`queue_depth{region, tier}`: `tier` is a member of the metric) or of a list of quoted names
(`['region', 'tier']`, as code declares labels and columns).

Two short words around a slash right after a number ("12 mL/min", "2.5 m/s") are a unit
of measure, not a path.

A shell command substitution inside a path (`/in/$(date +%Y)/x.csv`) is read as the
placeholders it formats (see `templates`), so the path goes on past it; the names the
command itself uses are found too.

Normalized forms compare case-insensitively with `-` and `_` alike, so `X-Request-Id` and
`x_request_id` are one name.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass
from functools import cached_property, lru_cache

from memproc.gate import templates

# Each pattern starts at the start of a token (a lookbehind), so a long run of characters is
# scanned once, not once per position.
_URL = re.compile(r"(?<![\w.+-])[a-z][a-z0-9+.-]*:(?://)?[^\s,;()'\"`]+(?<![.])", re.I)
_HOST_IN_URL = re.compile(
    r"^[a-z][a-z0-9+.-]*:(?:[a-z0-9+.-]*:)?//(?:[^@/\s]*@)?([^:/?#\s]+)", re.I
)
_PATH = re.compile(r"(?<![\w:/.$-])(?:~|\.{1,2})?/?(?:[\w.*{}<>$:@-]+/)+[\w.*{}<>$:@-]*(?![\w/])")
# Two short words around a slash, after a number: a unit of measure ("km/h", "MB/s").
_UNIT_RATIO = re.compile(r"[A-Za-z]{1,4}/[A-Za-z]{1,4}")
_AFTER_NUMBER = re.compile(r"\d\s*$")
_ROOT_PATH = re.compile(r"(?<![\w:/.$-])/[A-Za-z_{][\w.{}-]*(?![\w/])")
_DOTTED = re.compile(r"(?<![\w./-])[A-Za-z_$][\w-]*(?:\.[A-Za-z_*{][\w*{}-]*)+(?![\w])")
_SNAKE = re.compile(r"(?<![\w.$-])[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+(?![\w])")
_CAMEL = re.compile(r"(?<![\w.$-])[a-z]+[A-Z][A-Za-z0-9]*(?![\w])")
_PASCAL = re.compile(r"(?<![\w.$-])[A-Z][a-z0-9]+[A-Z][A-Za-z0-9]*(?![\w])")
_KEBAB_DIGIT = re.compile(r"(?<![\w.$/-])[a-z][a-z0-9]*(?:-[a-z0-9]+(?:\.\d+)*)+(?![\w/])")
_KEBAB_WORD = re.compile(r"(?<![\w.$/-])[a-z][a-z0-9]*(?:-[a-z0-9]+)+(?![\w/*])")
_GLOB = re.compile(r"(?<![\w/.:*-])(?=[\w.-]*[A-Za-z]{2})[\w.-]*\*[\w.*-]*(?![\w/])")
_HEADER = re.compile(r"(?<![\w.$/-])(?=\S*[a-z])[A-Z][a-z0-9]*(?:-[A-Z][a-z0-9]*)+(?![\w/])")
_IMAGE = re.compile(
    r"(?<![\w./:$-])([a-z0-9][\w./-]*[a-z0-9]):(?!\d{2,5}(?![\w.]))([\w$][\w.$-]*)(?![\w/:])"
)
_ENV = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?")
_FLAG = re.compile(r"(?<![\w-])--[a-z][\w-]*")
_KEY = re.compile(r"(?<![\w.$-])([A-Za-z_][\w.-]*)\s*(?:=~|!=|==|=(?!=)|:(?=\s))")
_BRACES = re.compile(r"(?:(?<![\w.])([A-Za-z_][\w.]*))?\s*\{([^{}]*)\}")
# A list of quoted names, as code writes label or column lists: `['region', 'tier']`.
_QUOTED_LIST = re.compile(r"\[([^\[\]]*)\]")
_QUOTED_NAME = re.compile(r"""['"]([A-Za-z_][\w.-]*)['"]""")
_BY_LIST = re.compile(r"\b(?:by|without|on|group_left|group_right)\s*\(([^()]*)\)", re.I)
_TEMPLATE = re.compile(r"\{[^{}/]*\}|<[^<>/]*>|(?<=/):[A-Za-z_]\w*|\$\{?[A-Za-z_]\w*\}?")
_PARTS = re.compile(r"[./]")
_CAMEL_SPLIT = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


@dataclass(frozen=True)
class Identifier:
    kind: str  # url host path dotted snake camel pascal kebab hyphenated glob image env flag
    # key member
    text: str
    norm: str
    parent: str = ""  # for a member: the normalized name of the list's owner
    # The name with its shell command substitutions expanded (`$(date +%Y)` -> `{year}`),
    # when it had any; `text` is what was written.
    template: str = ""

    @property
    def layout(self) -> str:
        """The text whose placeholders `templates` reads."""
        return self.template or self.text

    @cached_property
    def parts(self) -> list[str]:
        return [p for p in _PARTS.split(self.norm) if p]


def normalize(text: str) -> str:
    value = text.strip("`'\"").strip()
    if value.startswith("-"):
        return "--" + value.lstrip("-").lower()
    if "://" in value:
        value = re.split(r"[?#]", value, maxsplit=1)[0]  # a query names no other resource
    value = _TEMPLATE.sub("*", value)
    value = value.lower().replace("-", "_").rstrip("/.,;:")
    return value.removeprefix("./")


def split_words(name: str) -> list[str]:
    """A name's words: `maxWorkers` -> max, workers; `pool_size_max` -> pool, size, max."""
    words = []
    for chunk in re.split(r"[\s._/:=-]+", name):
        words += [w.lower() for w in _CAMEL_SPLIT.findall(chunk)]
    return [w for w in words if w]


class _Source:
    """The text with each shell command substitution expanded to placeholders (so a path
    does not end at `$(`), and the way back to what was written."""

    def __init__(self, written: str) -> None:
        self.written, self.text = written, ""
        self._edits: list[tuple[int, int, int, int]] = []  # new start, new end, old ones
        last = 0
        for match in templates.COMMAND.finditer(written):
            self.text += written[last : match.start()]
            start = len(self.text)
            self.text += templates.expand_command(match.group(1))
            self._edits.append((start, len(self.text), *match.span()))
            last = match.end()
        self.text += written[last:]

    def _back(self, at: int, end: bool) -> int:
        shift = 0
        for new_start, new_end, old_start, old_end in self._edits:
            if new_start < at < new_end or (at == new_start and end) or (at == new_end and not end):
                return old_end if end else old_start
            if at >= new_end:
                shift = old_end - new_end
        return at + shift

    def make(self, kind: str, match: re.Match[str], group: int = 0) -> Identifier:
        start, end = match.span(group)
        if not self._edits:
            return _make(kind, match.group(group))
        written = self.written[self._back(start, False) : self._back(end, True)]
        expanded = match.group(group)
        template = expanded if expanded != written else ""
        return Identifier(kind, written, normalize(expanded), template=template)


def find(text: str) -> list[Identifier]:
    """Every identifier in `text`, by shape."""
    source = _Source(text)
    text = source.text
    found: list[Identifier] = []
    taken: list[tuple[int, int]] = []
    for match in _URL.finditer(text):
        if "://" not in match.group() and not re.match(r"[a-z]+:[a-z]+:", match.group(), re.I):
            continue
        found.append(source.make("url", match))
        taken.append(match.span())
        host = _HOST_IN_URL.match(match.group())
        if host:
            found.append(_make("host", host.group(1)))
    for kind, pattern in (("path", _PATH), ("path", _ROOT_PATH), ("dotted", _DOTTED)):
        for match in pattern.finditer(text):
            if _inside(match.span(), taken) or _version_like(match.group()):
                continue
            if _UNIT_RATIO.fullmatch(match.group()) and _AFTER_NUMBER.search(text[: match.start()]):
                taken.append(match.span())  # "12 mL/min", "2.5 m/s": a unit, not a path
                continue
            found.append(source.make(kind, match))
            taken.append(match.span())
    for match in _IMAGE.finditer(text):
        if not _inside(match.span(), taken):
            found.append(source.make("image", match, 1))
            taken.append(match.span())
    for match in _GLOB.finditer(text):
        if not _inside(match.span(), taken):
            found.append(source.make("glob", match))
            taken.append(match.span())
    patterns = (
        ("snake", _SNAKE),
        ("camel", _CAMEL),
        ("pascal", _PASCAL),
        ("kebab", _KEBAB_DIGIT),
        ("kebab", _HEADER),
        ("hyphenated", _KEBAB_WORD),
    )
    for kind, pattern in patterns:
        for match in pattern.finditer(text):
            if _inside(match.span(), taken):
                continue
            digits = any(c.isdigit() for c in match.group())
            if (pattern is _KEBAB_DIGIT and not digits) or (pattern is _KEBAB_WORD and digits):
                continue
            found.append(source.make(kind, match))
    found += [_make("env", m.group(1)) for m in _ENV.finditer(text)]
    found += [_make("flag", m.group()) for m in _FLAG.finditer(text)]
    found += _members(text)
    for command in templates.COMMAND.finditer(source.written):  # names the command uses
        found += find(command.group(1))
    return _unique(found)


def _make(kind: str, text: str, parent: str = "") -> Identifier:
    return Identifier(kind, text, normalize(text), parent)


def _inside(span: tuple[int, int], taken: list[tuple[int, int]]) -> bool:
    return any(start <= span[0] and span[1] <= end for start, end in taken)


def _version_like(text: str) -> bool:
    return bool(re.fullmatch(r"v?\d+(?:\.\w+)*", text))


def _members(text: str) -> list[Identifier]:
    """Members of brace lists, lists of quoted names and `by (...)` lists, and the keys of
    `key=value` pairs."""
    found = []
    for match in _BRACES.finditer(text):
        if not re.search(r"[,=]", match.group(2)):
            continue  # a {placeholder}, not a list
        owner = normalize(match.group(1) or "")
        for item in re.split(r"[,\s]+", match.group(2)):
            key = re.match(r"[A-Za-z_][\w.-]*", item.strip())
            if key:
                found.append(_make("member", key.group(), owner))
    for match in _QUOTED_LIST.finditer(text):
        items = [i.strip() for i in match.group(1).split(",")]
        names = [_QUOTED_NAME.fullmatch(i) for i in items]
        if all(names):
            found += [_make("member", n.group(1)) for n in names if n]
    for match in _BY_LIST.finditer(text):
        for item in match.group(1).split(","):
            if re.fullmatch(r"\s*[A-Za-z_]\w*\s*", item):
                found.append(_make("member", item.strip()))
    for match in _KEY.finditer(text):
        if len(match.group(1)) > 2:
            found.append(_make("key", match.group(1)))
    return found


def _unique(found: list[Identifier]) -> list[Identifier]:
    seen: dict[tuple[str, str, str], Identifier] = {}
    for ident in found:
        seen.setdefault((ident.kind, ident.norm, ident.parent), ident)
    return list(seen.values())


# -- relations ----------------------------------------------------------------------------------

# Kinds that name a resource by themselves; a member or key only names one within its owner.
NAMING_KINDS = frozenset(
    {"url", "host", "path", "dotted", "snake", "camel", "pascal", "kebab", "env", "image", "glob"}
)
# A hyphenated word ("logs-default") names a resource only when a glob ("logs-*") matches it.
GLOB_TARGETS = NAMING_KINDS | {"hyphenated"}
# Kinds only code has: a PascalCase word may be a brand ("GitHub"), these may not.
CODE_KINDS = NAMING_KINDS - {"pascal"} | {"flag", "key"}


def same(a: Identifier, b: Identifier) -> bool:
    return _same(a, b)


@lru_cache(maxsize=65536)
def _same(a: Identifier, b: Identifier) -> bool:
    """The same resource: equal names, one dotted name the tail of the other
    (`ledger.entries`, `finance.ledger.entries`; `shipment_id`, `msg.body.shipment_id`), or
    one path or URL inside the other."""
    if a.norm == b.norm:
        return True
    if "glob" in (a.kind, b.kind):
        glob, name = (a, b) if a.kind == "glob" else (b, a)
        return name.kind != "glob" and fnmatch.fnmatchcase(name.norm, glob.norm)
    if a.kind in ("path", "url") and b.kind in ("path", "url"):
        left, right = _path_of(a), _path_of(b)
        if a.kind != b.kind and left and right:  # GET /v3/parcels, https://x.org/v3/parcels
            return left == right or _within(left, right) or _within(right, left)
        return _within(a.norm, b.norm) or _within(b.norm, a.norm)
    return _tail(a.parts, b.parts) or _tail(b.parts, a.parts)


def _tail(short: list[str], long_: list[str]) -> bool:
    return 0 < len(short) < len(long_) and long_[-len(short) :] == short and _specific(short)


def _specific(parts: list[str]) -> bool:
    """A tail names one thing when it is compound: two parts, or one snake or camel name."""
    return len(parts) >= 2 or "_" in parts[0]


def path_of(ident: Identifier) -> str:
    """The path a URL or path names, as normalized: "" for a URL without one or a relative
    path."""
    return _path_of(ident)


def _path_of(ident: Identifier) -> str:
    """The path part: a URL's after its host, a path as it is."""
    if ident.kind == "url":
        match = re.match(r"^[a-z][\w+.-]*:(?:[\w+.-]*:)?//[^/]*(/.*)?$", ident.norm)
        return (match.group(1) or "") if match else ""
    return ident.norm if ident.norm.startswith("/") else ""


def _within(prefix: str, path: str) -> bool:
    """`prefix` names a folder or location `path` lies in (wildcards match one segment)."""
    a, b = prefix.split("/"), path.split("/")
    if len(a) >= len(b) or len(a) < 2:
        return False
    return all(x == y or "*" in (x, y) for x, y in zip(a, b, strict=False))
