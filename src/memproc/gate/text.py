"""A small tokenizer for step text: words, artifacts, quantities, formats, versions, negation.

Why not a general NLP library: the gate must be deterministic, fast and free of models, and
procedure steps are terse imperative phrases ("copy the export, no compression"). A
regular tokenizer that knows paths, env vars, flags, versions and units, plus a light stemmer,
reads them well enough, and every decision it makes can be shown to a reviewer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache

from memproc.gate import lexicon as lx

_TOKEN = re.compile(
    r"""
    (?P<url>[a-z][a-z0-9+.-]*://[^\s,;()]+)
  | (?P<code>`[^`\n]+`)
  | (?P<quoted>"[^"\n]+")
  | (?P<env>\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b)
  | (?P<flag>(?<![\w-])--[a-z][\w-]*)
  | (?P<channel>(?<![\w])\#[a-z][\w-]*)
  | (?P<path>(?:~|\.{1,2})?/?(?:[\w.*-]+/)+[\w.*-]*|[\w-]+(?:\.[\w-]+)*\.[a-z][a-z0-9]{0,4}\b)
  | (?P<version>\bv\d+(?:\.\d+)*\b|\b\d+\.\d+\.\d+(?:\.\d+)*\b)
  | (?P<number>\d+(?:\.\d+)?)
  | (?P<word>[A-Za-z][A-Za-z0-9_']*(?:-[A-Za-z0-9_]+)*)
  | (?P<punct>[;,.!?:()])
    """,
    re.X,
)
# "20 jobs/min" is a rate, not a path: rewritten to "20 jobs per min" first.
_VOWEL = re.compile(r"[aeiouy]")
# Phrasal verbs written as one word elsewhere: "back up" is "backup".
_PHRASAL = re.compile(
    r"\b(back|sign|log|roll|set|clean|shut|spin|tear)\s+(up|off|in|out|back|down)\b", re.I
)
_PER_UNIT = re.compile(r"(\w)/(s|sec|second|min|minute|h|hr|hour|d|day)\b", re.I)
# A colon is no break: it introduces a value ("read_timeout: 45s") or a list.
_CLAUSE_BREAKS = frozenset({";", ",", ".", "!", "?", "(", ")"})
_CLAUSE_WORDS = frozenset({"then"})
ARTIFACT_KINDS = ("url", "code", "quoted", "env", "flag", "channel", "path")
_KIND_ALIASES = {"repo": "repository", "db": "database", "folder": "directory", "dir": "directory"}
_SUFFIXES = (
    "izations",
    "ization",
    "ations",
    "ation",
    "ating",
    "ments",
    "ment",
    "ings",
    "ing",
    "ions",
    "ion",
    "ates",
    "ated",
    "ate",
    "ies",
    "ers",
    "er",
    "ly",
    "ed",
    "es",
    "s",
    "e",
    "y",
)


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """A light suffix stripper: "validations", "validate", "validating" -> "valid". Matching
    is by prefix (see `same_stem`), so what this leaves need not be a word."""
    word = word.lower().strip("'")
    for suffix in _SUFFIXES:
        rest = word[: -len(suffix)]
        if word.endswith(suffix) and len(rest) >= 3 and _VOWEL.search(rest):
            return rest  # "https" keeps its "s": "http" has no vowel, it is an acronym
    return word


def same_stem(a: str, b: str) -> bool:
    """Stems match when equal, or when the shorter (at least 5 letters) begins the longer:
    "regist" (register) and "registr" (registry)."""
    if a == b:
        return True
    short, long_ = (a, b) if len(a) <= len(b) else (b, a)
    # a word goes on in letters: "email" is no prefix of the name "email_sha256"
    return len(short) >= 5 and long_.startswith(short) and long_[len(short)].isalpha()


def _synonym_stems() -> list[frozenset[str]]:
    return [frozenset(stem(word) for word in group) for group in lx.SYNONYMS]


_SYNONYM_STEMS = _synonym_stems()


@lru_cache(maxsize=16384)
def _classes(word: str) -> frozenset[int]:
    """The synonym classes a stem belongs to (by `same_stem` with one of their words)."""
    return frozenset(
        i for i, group in enumerate(_SYNONYM_STEMS) if any(same_stem(word, s) for s in group)
    )


def equivalent(a: str, b: str) -> bool:
    """The same stem, or two words of one synonym class."""
    return same_stem(a, b) or bool(_classes(a) & _classes(b))


@dataclass(frozen=True)
class Token:
    kind: str  # url, code, quoted, env, flag, channel, path, version, number, word
    text: str
    negated: bool = False

    @property
    def lower(self) -> str:
        return self.text.lower()


@dataclass(frozen=True)
class Quantity:
    """A number with a unit: `dimension` is time (seconds), size (bytes), rate (per second)
    or count:<noun stem>; `value` is in those base units."""

    dimension: str
    value: float
    text: str


@dataclass
class Clause:
    """One clause of a procedure's text, where it came from, and what the tokenizer found."""

    source: str  # "step 2", "precondition 1", "output 1", "trigger"
    position: int  # the step number; 0 for preconditions and the trigger
    text: str
    tokens: list[Token] = field(default_factory=list)

    @property
    def words(self) -> list[Token]:
        return [t for t in self.tokens if t.kind == "word"]

    def stems(self, *, negated: bool = False) -> list[str]:
        """Content stems (hyphenated words split), of the plain or of the negated tokens."""
        found = []
        for token in self.tokens:
            if token.kind not in ("word", "number", "version") or token.negated != negated:
                continue
            for part in token.lower.split("-"):
                if part and part not in lx.STOPWORDS and part not in lx.NEGATORS:
                    found.append(stem(part))
        return found

    @property
    def verb(self) -> str | None:
        """The clause's leading verb (steps are imperative), as a stem."""
        for token in self.words:
            if token.lower not in lx.STOPWORDS:
                return stem(token.lower.split("-")[-1])
        return None

    @property
    def negated(self) -> bool:
        return any(t.negated for t in self.tokens)


def split_clauses(text: str, source: str, position: int) -> list[Clause]:
    """Tokenize and cut at punctuation and "then"; mark what each negator reaches."""
    clauses: list[Clause] = []
    current = Clause(source, position, "")
    breaks_after: list[str] = []
    tokens = tokenize(text)
    for i, token in enumerate(tokens):
        breaks = token.kind == "punct" and token.text in _CLAUSE_BREAKS
        if breaks or (token.kind == "word" and token.lower in _CLAUSE_WORDS) or _turns(tokens, i):
            if current.tokens:
                clauses.append(current)
                breaks_after.append(token.text)
            current = Clause(source, position, "")
            continue
        current.tokens.append(token)
    if current.tokens:
        clauses.append(current)
        breaks_after.append("")
    carried = False
    for i, clause in enumerate(clauses):
        carried = carried and _continues_list(clause)
        clause.tokens, open_end = _mark_negation(clause.tokens, carried)
        carried = open_end and breaks_after[i] == ","
        clause.text = " ".join(t.text for t in clause.tokens)
    return clauses


def _turns(tokens: list[Token], i: int) -> bool:
    """ "X and must not Y", "X but never Y": a conjunction that opens a second rule."""
    if tokens[i].lower not in ("and", "but") or i == 0:
        return False
    following = [t.lower for t in tokens[i + 1 : i + 3]]
    return bool(following) and (
        following[0] in ("never", "must", "should", "shall", "cannot")
        or following[:2] in (["do", "not"], ["may", "not"])
        or following[0] in ("don't", "mustn't")
    )


def _continues_list(clause: Clause) -> bool:
    """A clause after a comma that goes on with the list a negation opened ("never caches,
    logs or retries"): it holds "or"/"nor", or is a word or two."""
    words = [t.lower for t in clause.tokens if t.kind == "word"]
    if words and words[0] in lx.NEGATION_STOPS:
        return False
    return bool({"or", "nor"} & set(words)) or len(clause.tokens) <= 2


def tokenize(text: str) -> list[Token]:
    text = _PER_UNIT.sub(r"\1 per \2", text)
    text = _PHRASAL.sub(r"\1\2", text)
    tokens = []
    for match in _TOKEN.finditer(text):
        kind = match.lastgroup or "word"
        tokens.append(Token(kind, match.group()))
    return tokens


def _negator_at(tokens: list[Token], i: int) -> int:
    """How many tokens a negation cue at `i` spans (0: none). Cues are the negators, a "n't"
    contraction, and contrast phrases that set aside what follows: "instead of", "rather
    than" (what follows is what the step does not do)."""
    word = tokens[i].lower if tokens[i].kind == "word" else ""
    following = tokens[i + 1].lower if i + 1 < len(tokens) else ""
    if word in lx.NEGATORS or (word.endswith("n't") and len(word) > 3):
        return 1
    if (word, following) in lx.CONTRAST_PHRASES:
        return 2
    return 0


def _mark_negation(tokens: list[Token], carried: bool = False) -> tuple[list[Token], bool]:
    """A negation cue hides itself and the rest of its clause, up to a connective ("does not
    warm the cache, then serves": only the cache is not warmed). Returns the tokens and
    whether the negation ran to the clause's end (a list after a comma may continue it)."""
    marked: list[Token] = []
    negating = carried
    i = 0
    while i < len(tokens):
        span = _negator_at(tokens, i)
        word = tokens[i].lower if tokens[i].kind == "word" else ""
        if span:
            negating = True
        elif word in lx.NEGATION_STOPS or tokens[i].text == ":":
            negating = False
        for token in tokens[i : i + max(span, 1)]:
            marked.append(Token(token.kind, token.text, negated=negating))
        i += max(span, 1)
    return marked, negating


# -- artifacts --------------------------------------------------------------------------------


def normalize_artifact(kind: str, text: str) -> str:
    value = text.strip("`\"'").lower().rstrip("/.")
    if kind == "path":
        value = value.removeprefix("./")
    if kind == "env":
        value = value.strip("${}")
    return f"{kind}:{value}"


def artifacts(clause: Clause, *, negated: bool = False) -> set[str]:
    """Typed names the clause mentions: paths, URLs, env vars, flags, channels, code, and
    resource nouns with their name ("the invoices table" -> "table:invoices")."""
    found = {
        normalize_artifact(t.kind, t.text)
        for t in clause.tokens
        if t.kind in ARTIFACT_KINDS and t.negated == negated
    }
    tokens = clause.tokens
    for i, token in enumerate(tokens):
        if token.kind != "word" or token.negated != negated:
            continue
        noun = token.lower.rstrip("s") if token.lower.rstrip("s") in lx.RESOURCE_KINDS else ""
        noun = noun or (token.lower if token.lower in lx.RESOURCE_KINDS else "")
        if not noun:
            continue
        name = _resource_name(tokens, i)
        if name:
            found.add(f"{_KIND_ALIASES.get(noun, noun)}:{name}")
    return found


def _resource_name(tokens: list[Token], i: int) -> str | None:
    before = tokens[i - 1] if i > 0 else None
    if before is not None and _is_name(before):
        return before.lower.strip("`\"'")
    after = tokens[i + 1] if i + 1 < len(tokens) else None
    if after is not None and _is_name(after) and after.kind != "word":
        return after.lower.strip("`\"'")
    identifier = after is not None and (any(c in after.text for c in "_.") or after.text.isupper())
    if after is not None and after.kind == "word" and _is_name(after) and identifier:
        return after.lower
    return None


def _is_name(token: Token) -> bool:
    if token.kind in ("code", "quoted", "env"):
        return True
    if token.kind != "word":
        return False
    word = token.lower
    if word.endswith("ing") or _unit(word) is not None or word.isdigit():
        return False  # "before closing tickets", "the 3 GB file": no names
    return (
        word not in lx.NOT_NAMES
        and word not in lx.GENERIC_VERBS
        and word not in lx.NEGATORS
        and word not in lx.RESOURCE_KINDS
        and word not in lx.PRODUCER_VERBS
        and word not in lx.ANCHORS
    )


# -- formats, versions, quantities -------------------------------------------------------------


def formats(clause: Clause, *, extensions: bool = True) -> set[str]:
    """Data formats a clause names, as words and (with `extensions`) as file extensions."""
    found = set()
    for token in clause.tokens:
        if token.negated or (token.kind == "path" and not extensions):
            continue
        candidates = [token.lower]
        if token.kind == "path":
            candidates = [token.lower.rsplit(".", 1)[-1]]
        for word in candidates:
            if word in lx.FORMATS:
                found.add(lx.FORMAT_ALIASES.get(word, word))
    return found


def versions(clause: Clause) -> set[tuple[str, str]]:
    """(subject stem, version) pairs: "client v4" -> ("client", "4"); "schema version 7"."""
    found = set()
    tokens = clause.tokens
    for i, token in enumerate(tokens):
        if token.negated:
            continue
        value = None
        if token.kind == "version":
            value = token.lower.lstrip("v")
        elif token.kind == "number" and i > 0 and tokens[i - 1].lower == "version":
            value = token.text
        if value is None:
            continue
        subject = _subject_before(tokens, i)
        found.add((subject, value))
    return found


def _subject_before(tokens: list[Token], i: int) -> str:
    for token in reversed(tokens[:i]):
        if token.kind == "word" and token.lower not in lx.STOPWORDS and token.lower != "version":
            return stem(token.lower)
    return ""


def quantities(clause: Clause, *, periods: bool = False) -> list[Quantity]:
    """Numbers with units. Period adverbs ("hourly") count only when `periods` is set: they
    are limits in a limit clause and mere schedules elsewhere."""
    tokens = [t for t in clause.tokens if not t.negated]
    found = []
    for i, token in enumerate(tokens):
        if periods and token.lower in lx.PERIOD_WORDS:
            found.append(Quantity("time", lx.PERIOD_WORDS[token.lower], token.text))
            continue
        number = _number(token)
        if number is None or i + 1 >= len(tokens):
            continue
        quantity = _with_unit(number, tokens, i)
        if quantity is not None:
            found.append(quantity)
    return found


def _number(token: Token) -> float | None:
    if token.kind == "number":
        return float(token.text)
    return float(lx.NUMBER_WORDS[token.lower]) if token.lower in lx.NUMBER_WORDS else None


def _unit(word: str) -> tuple[str, float] | None:
    word = word.lower()
    singular = word[:-1] if word.endswith("s") and len(word) > 2 else word
    for candidate in (word, singular):
        if candidate in lx.TIME_UNITS:
            return "time", lx.TIME_UNITS[candidate]
        if candidate in lx.SIZE_UNITS:
            return "size", lx.SIZE_UNITS[candidate]
    return None


def _with_unit(number: float, tokens: list[Token], i: int) -> Quantity | None:
    unit_token = tokens[i + 1]
    if unit_token.kind != "word":
        return None
    text = f"{tokens[i].text} {unit_token.text}"
    per = _per_unit(tokens, i + 2)
    unit = _unit(unit_token.text)
    if unit is not None and unit[0] == "size":
        return Quantity("size", number * unit[1], text)
    if unit is not None and unit[0] == "time" and per is None:
        if tokens[i].kind != "number" and unit_token.lower in ("m", "s", "d", "h", "w"):
            return None  # "a m" is no duration
        return Quantity("time", number * unit[1], text)
    if unit_token.lower in ("rps", "qps"):
        return Quantity("rate", number, text)
    if unit_token.lower == "rpm":
        return Quantity("rate", number / 60.0, text)
    if per is not None:
        return Quantity("rate", number / per, f"{text} per {tokens[i + 3].text}")
    if tokens[i].kind == "number" and unit_token.lower not in lx.STOPWORDS:
        return Quantity(f"count:{stem(unit_token.lower)}", number, text)
    return None


def _per_unit(tokens: list[Token], j: int) -> float | None:
    if j + 1 < len(tokens) and tokens[j].lower in ("per", "a", "an", "every", "each"):
        unit = _unit(tokens[j + 1].text)
        if unit is not None and unit[0] == "time":
            return unit[1]
    return None


def has_phrase(clause: Clause, phrases: Iterable[str]) -> bool:
    lowered = " " + " ".join(t.lower for t in clause.tokens) + " "
    return any(f" {phrase} " in lowered for phrase in phrases)


def content_stems(text: str, min_chars: int = 3) -> set[str]:
    """The stems of a text's words of `min_chars` letters or more, without function words and
    the verbs of doing in general: what a phrase is about, to compare two phrases by."""
    return {
        stem(w.lower())
        for w in re.findall(r"[A-Za-z][A-Za-z-]+", text)
        if len(w) >= min_chars and w.lower() not in lx.STOPWORDS | lx.GENERIC_VERBS
    }
