"""Exposure: a dependent that uses what the revision changed, where no rule decided.

The rules decide the changes they understand: an output removed, a limit tightened, a new
demand unmet. Many real breaks are of kinds no rule can read (a default flipped, an endpoint
closed, a build that drops one of two bundles); a gate that passes those because it found no
rule to apply is the silent regression people trust it not to make. So when no rule decided
a pair, this asks whether the dependent is exposed to the change: does a unit of text that
the revision added, edited or removed share with the dependent's steps an identifier, a
system's name, or several content words? If so, the pair is undecided ("low_confidence"):
the client's judge decides it, or the configured policy (quarantine for review).

One shared word is not exposure: a time word, a tool both happen to run, a schema both name
in passing. It takes an identifier, or two content words or more beside the words of the
revised system's own name (every procedure about that system holds those, whatever the
revision changed).

Why the changed units and not the whole procedures: two procedures about the same system
share words whatever the revision does. Only a dependent that touches the edited text itself
can be broken by the edit, and a revision that rewords nothing a dependent touches leaves it
alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memproc.gate import lexicon as lx
from memproc.gate import values
from memproc.gate.facts import Facts, demand_texts
from memproc.gate.identifiers import Identifier
from memproc.gate.identifiers import find as find_identifiers
from memproc.gate.identifiers import normalize as normalize_identifier
from memproc.gate.model import Undecided
from memproc.gate.text import split_clauses, stem

# How much of an edited unit must stay for it to count as the same unit edited (shared
# tokens over all tokens of the pair), rather than one unit dropped and another added.
EDIT_OVERLAP = 1 / 3
# Identifier kinds too generic to link two procedures by themselves: a flag (`--force`) or a
# bare number-like version says nothing about which system is meant.
_WEAK_IDENTIFIER_KINDS = frozenset({"flag", "version"})
_SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class _Unit:
    where: str
    text: str


def _units(facts: Facts) -> list[_Unit]:
    """Steps (action and detail), preconditions, outputs and the trigger, as written."""
    found = [_Unit(where, text) for where, text in facts.texts]
    found += [
        _Unit(f"precondition {n}", text)
        for n, text in enumerate(demand_texts(facts.procedure), start=1)
    ]
    return found


def _key(text: str) -> str:
    return _SPACES.sub(" ", text.lower()).strip()


def content_tokens(text: str) -> set[str]:
    """Identifiers and content stems: what a unit is about, without its function words and
    the verbs of doing in general ("run", "use", "check")."""
    found = {normalize_identifier(i.text) for i in _strong(text)}
    text = _PHRASAL_SIGN.sub(lambda m: f"sign{m.group(1).lower()}", text)
    generic = {stem(v) for v in lx.GENERIC_VERBS}
    for clause in split_clauses(text, "", 0):
        found |= {s for s in clause.stems() if len(s) > 2 and s not in generic}
        found |= {_NOT + s for s in clause.stems(negated=True) if len(s) > 2 and s not in generic}
        found |= {stem(t.lower) for t in clause.tokens if t.lower in lx.NEGATING_VERBS}
    return found


# "Sign off" is one word (to approve; an English phrasal verb), not "sign" as in a signature.
_PHRASAL_SIGN = re.compile(r"\bsign(?:s|ed|ing)?[\s-]+(off)\b", re.I)
_SIGN_IN = re.compile(r"\bsign(?:s|ed|ing)?[\s-]+(off|in|on|up)\b", re.I)


# Marks a negated word ("must not write"), so that an edit which only turns an action's
# polarity ("the job writes to the archive" -> "the job must not write to the archive")
# changes it.
_NOT = "not "


def _plain(tokens: set[str]) -> set[str]:
    """Tokens without their polarity: a dependent that writes and one that never does are
    both exposed to a change of the rule on writing."""
    return {t.removeprefix(_NOT) for t in tokens}


# Words that close, require or narrow something (access control vocabulary: RFC 2119's
# "required", POSIX's "read-only"), and the transport security terms that a setting turned on
# requires of every client (TLS and signing terms).
RESTRICTING_WORDS = lx.words(
    """read-only readonly require requires required enforce enforces enforced force forced
    forces mandatory only deny denies denied disable disables disabled block blocks blocked
    reject rejects rejected forbid forbids forbidden restrict restricts restricted private"""
)
SECURITY_TERMS = lx.words("tls ssl https encrypt encrypted encryption signing signed mtls starttls")
RESTRICTIVE_WORDS = RESTRICTING_WORDS | SECURITY_TERMS
# Setting words that open something when true ("publicRead", "allow_anonymous").
PERMISSIVE_WORDS = lx.words("public allow allowed anonymous plain plaintext insecure bypass")


def restrictions(old: Facts, revision: Facts) -> list[str]:
    """What the revision newly closes or requires: restrictive words its edited or new units
    add, and settings turned from open to closed (`public: true` -> `false`, `ssl: off` ->
    `on`)."""
    found = []
    restrictive = {stem(w) for w in RESTRICTIVE_WORDS}
    added = added_tokens(old, revision, polar=True)  # "never denied" closes nothing
    found += sorted(t for t in added if t in restrictive)
    for change in values.changed(old.procedure, revision.procedure):
        before, after = values.truth(change.old), values.truth(change.new)
        if before is None or after is None or before == after:
            continue
        words = set(change.words)
        if (before and words & PERMISSIVE_WORDS) or (after and words & RESTRICTIVE_WORDS):
            found.append(f"{change.key}: {change.old} -> {change.new}")
    return found


def added_tokens(old: Facts, revision: Facts, polar: bool = False) -> set[str]:
    """The tokens a revision's new or edited units hold that their old counterparts did not;
    `polar`: a negated word keeps its mark ("not block")."""
    keep = (lambda tokens: tokens) if polar else _plain
    old_texts = [u.text for u in _units(old) if u.text.strip()]
    old_tokens = [keep(content_tokens(t)) for t in old_texts]
    before = {_key(t) for t in old_texts}
    found: set[str] = set()
    for unit in _units(revision):
        if not unit.text.strip() or _key(unit.text) in before:
            continue
        mine = keep(content_tokens(unit.text))
        counterpart = max(old_tokens, key=lambda theirs: _overlap(mine, theirs), default=set())
        found |= mine - counterpart
    return found


def changed_tokens(old: Facts, revision: Facts) -> set[str]:
    """What the revision changed, token by token: the whole of a unit it dropped, and for a
    unit it edited (its counterpart: the old unit it shares most tokens with, at least a
    third), the tokens on one side only, a word whose negation changed among them. A
    dependent that shares only an edited unit's
    unchanged words (the keys beside a renamed one, the service whose port did not change)
    is not exposed by the edit. A unit only added takes nothing away from anyone: what it
    asks of others is a demand or a prohibition, which the rules judge."""
    old_units = [u for u in _units(old) if u.text.strip()]
    new_units = [u for u in _units(revision) if u.text.strip()]
    before = {_key(u.text) for u in old_units}
    after = {_key(u.text) for u in new_units}
    dropped = [content_tokens(u.text) for u in old_units if _key(u.text) not in after]
    changed: set[str] = set()
    for unit in new_units:
        if _key(unit.text) in before:
            continue
        mine = content_tokens(unit.text)
        counterpart = max(dropped, key=lambda theirs: _overlap(mine, theirs), default=set())
        if _overlap(mine, counterpart) >= EDIT_OVERLAP:
            changed |= mine ^ counterpart
            dropped.remove(counterpart)
    for theirs in dropped:
        changed |= theirs
    return _plain(changed)


def _overlap(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a and b else 0.0


# Shared content words, beside identifiers, that make a dependent exposed to an edit.
MIN_SHARED_WORDS = 2


@dataclass(frozen=True)
class Exposure:
    """The changed tokens the dependent's own text holds; `named` those that are identifiers
    and `own` the words of the revised system's own name."""

    shared: frozenset[str]
    named: frozenset[str] = frozenset()
    own: frozenset[str] = frozenset()

    @property
    def exposed(self) -> bool:
        words = self.shared - self.named - self.own
        return bool(self.shared & self.named) or len(words) >= MIN_SHARED_WORDS

    def describe(self) -> str:
        return ", ".join(sorted(self.shared))


def exposure(
    old: Facts, revision: Facts, dependent: Facts, examined: Sequence[str] = ()
) -> Exposure:
    """`examined`: texts of changes a rule has already judged against this dependent (new
    demands and prohibitions, found met or out of reach): their words are decided, and
    exposure rests on the rest of the change."""
    theirs: set[str] = set()
    for unit in _units(dependent):
        theirs |= _plain(content_tokens(unit.text))
    decided: set[str] = set()
    for text in examined:
        decided |= _plain(content_tokens(text))
    shared = frozenset((changed_tokens(old, revision) - decided) & theirs)
    named = {normalize_identifier(i.text) for u in _units(dependent) for i in _strong(u.text)}
    return Exposure(shared, frozenset(shared & named), frozenset(shared & own_words(revision)))


def _strong(text: str) -> list[Identifier]:
    """Identifiers specific enough to link two procedures by themselves."""
    return [
        i
        for i in find_identifiers(text)
        if i.kind not in _WEAK_IDENTIFIER_KINDS and len(i.norm) > 2
    ]


def _does(dependent: Facts) -> set[str]:
    """The stems the dependent's steps say it does, not negated: a dependent that already
    signs, encrypts or enforces is not the one a new requirement to do so closes out. To
    sign in, on or up is to log in or enrol, not to sign."""
    found: set[str] = set()
    for where, text in dependent.texts:
        if where.startswith("step"):
            text = _SIGN_IN.sub(lambda m: f"sign{m.group(1).lower()}", text)
            found |= {s for c in split_clauses(text, "", 0) if not c.negated for s in c.stems()}
    return found


def own_words(facts: Facts) -> set[str]:
    """The stems of the procedure's declared entity names: what it runs on, not what it did."""
    labels = " ".join((*facts.procedure.entity_names, *facts.procedure.aliases))
    return {s for c in split_clauses(labels, "", 0) for s in c.stems()}


def undecided(
    old: Facts,
    revision: Facts,
    dependent: Facts,
    examined: Sequence[str] = (),
    linked: bool = False,
) -> Undecided | None:
    """A question for the judge when the dependent is exposed to the change, or, when it is
    `linked` to the revised system, when the revision closes or requires something (a
    dependent that worked through what is now closed breaks, and no rule can tell which
    dependents did)."""
    found = exposure(old, revision, dependent, examined)
    if not found.exposed:
        closed = restrictions(old, revision) if linked else []
        closed = [c for c in closed if c not in _does(dependent)]
        if not closed:
            return None
        return Undecided(
            dependent.procedure.id,
            "low_confidence",
            "no rule decided this pair; the revision closes or requires something on a system "
            "the dependent uses (" + ", ".join(closed) + ")",
        )
    return Undecided(
        dependent.procedure.id,
        "low_confidence",
        "no rule decided this pair, but the dependent's text holds what the revision changed ("
        + found.describe()
        + ")",
    )
