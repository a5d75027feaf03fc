"""New prohibitions a revision makes, and dependents that do what they forbid.

A prohibition is a clause that forbids ("never rewrite tags", "do not call the v1 search
endpoint", "basic auth is deprecated", "shared passwords no longer work"). One whose verb is
left out ("restart workers with the supervisor, and never from a shell") forbids the verb of
the clause before it. A dependent violates it when one of its steps, action and detail read
as one, does what it forbids: most of its content, not negated ("SFTP instead of FTP" does
not use FTP). A prohibition of a time window ("must not run on weekends before 09:00") is
broken by a dependent that shares the surface and runs inside the window.
"""

from __future__ import annotations

import math
import re

from memproc.gate import lexicon as lx
from memproc.gate import schedule
from memproc.gate.facts import Facts, code_names, forbidden_verb, prohibited_terms
from memproc.gate.model import Finding
from memproc.gate.surface import Surface, norm_entity
from memproc.gate.text import Clause, artifacts, equivalent, stem

# Share of a prohibition's terms one step must hold to violate it.
VIOLATE_SHARE = 0.66
# Prepositions that open an elliptical prohibition ("never from a shell"): closed class.
_PREPOSITIONS = lx.words("against from on in into to with within during outside inside via at")
Prohibition = tuple[Clause, list[str]]


def prohibitions_of(facts: Facts) -> list[Prohibition]:
    """Every prohibition of a procedure, an elliptical one completed by the clause before."""
    found: list[Prohibition] = []
    for clauses in facts.units.values():
        previous: Clause | None = None
        for clause in clauses:
            terms = prohibited_terms(clause)
            if terms and previous is not None and _elliptical(clause):
                terms = _head_terms(previous) + terms
            if terms:
                found.append((clause, _alternatives(clause, list(dict.fromkeys(terms)))))
            else:
                previous = clause
    return found


def _alternatives(clause: Clause, terms: list[str]) -> list[str]:
    """A prohibition of alternatives ("never edit or drop rows") forbids each one: the
    words joined by "or" become one slot, `a|b`, that either fills and that a step must fill
    (see `covered`)."""
    words = [t.lower for t in clause.words]
    for i in range(1, len(words) - 1):
        a, b = stem(words[i - 1]), stem(words[i + 1])
        if words[i] == "or" and a in terms and b in terms and a != b:
            slot = f"{a}|{b}"
            return [slot if t == a else t for t in terms if t != b]
    return terms


def _elliptical(clause: Clause) -> bool:
    """The forbidden thing starts with a preposition: no verb of its own."""
    words = [t.lower for t in clause.words]
    for i, word in enumerate(words):
        if word in lx.NEGATORS or word in lx.PROHIBITION_LEADS or word in ("and", "but", "or"):
            continue
        if word in ("must", "should", "do", "does", "not"):
            continue
        return word in _PREPOSITIONS and i > 0
    return False


def _head_terms(clause: Clause) -> list[str]:
    """The verb and its object: the first two content stems of a clause."""
    stems = [s for s in clause.stems() if s not in lx.STOPWORDS]
    return stems[:2]


def new_prohibitions(old: Facts, revision: Facts) -> list[Prohibition]:
    before = [terms for _, terms in prohibitions_of(old)]
    return [
        (clause, terms)
        for clause, terms in prohibitions_of(revision)
        if not any(covered(terms, prior) for prior in before)
    ]


def covered(terms: list[str], stems: list[str], strong: frozenset[str] = frozenset()) -> bool:
    """Most of a prohibition's terms are in the step; a term from a compound name
    ("configuration-snippet", "read_replica") weighs double, being specific."""

    def held(term: str) -> bool:
        return any(equivalent(part, s) for part in term.split("|") for s in stems)

    if any("|" in t and not held(t) for t in terms):
        return False  # none of the forbidden alternatives is done
    weight = sum(2 if t in strong else 1 for t in terms)
    have = sum(2 if t in strong else 1 for t in terms if held(t))
    return have >= max(1, math.ceil(VIOLATE_SHARE * weight))


def compound_stems(clause: Clause) -> frozenset[str]:
    """Stems of the parts of hyphenated or snake_case words in a clause."""
    return frozenset(
        stem(part)
        for t in clause.tokens
        if ("-" in t.text or "_" in t.text) and t.kind in ("word", "path", "code")
        for part in t.lower.replace("_", "-").split("-")
        if part
    )


def artifact_stems(found: set[str]) -> list[str]:
    """The words of artifact names as stems: "flag:--force" -> ["forc"]."""
    return [stem(w) for a in found for w in norm_entity(a.split(":", 1)[1]).split()]


def step_stems(clauses: list[Clause]) -> list[str]:
    stems = [s for c in clauses for s in c.stems()]
    stems += [
        name
        for c in clauses
        for t in c.tokens
        if t.kind == "code" and not t.negated
        for name in code_names(t)
    ]
    stems += [s for c in clauses for s in artifact_stems(artifacts(c))]
    stems += [
        stem(t.lower.replace("-", ""))
        for c in clauses
        for t in c.tokens
        if "-" in t.lower and not t.negated
    ]
    return stems


_RELATIVE = lx.words("that which who whose where when")


def target(clause: Clause) -> tuple[list[str], str] | None:
    """The thing a prohibition is about, as (qualifiers, head): the last phrase after a
    preposition ("into staging tables" -> (["stag"], "tabl")), up to a relative clause."""
    words: list[str] = []
    for token in clause.tokens:
        if token.kind == "word" and token.lower in _RELATIVE:
            break
        words.append(token.lower)
    starts = [i for i, w in enumerate(words) if w in _PREPOSITIONS]
    for start in reversed(starts):
        phrase: list[str] = []
        for word in words[start + 1 :]:
            if word in lx.STOPWORDS or not word.isalpha():
                if phrase:
                    break
                continue  # articles before the phrase
            phrase.append(word)
        if phrase:
            return [stem(w) for w in phrase[:-1]], stem(phrase[-1])
    return None


def _does_the_act(rule: Clause, clauses: list[Clause]) -> bool:
    """For "no <subject> may <act>": the step does that very act (see `forbidden_verb`)."""
    verb = forbidden_verb(rule)
    return verb is None or any(equivalent(verb, s) for s in step_stems(clauses))


def _other_target(rule: Clause, clauses: list[Clause]) -> bool:
    """The dependent does the forbidden thing to another object of the same kind: "never write
    into staging tables" and "write into the reporting table"."""
    wanted = target(rule)
    if wanted is None or not wanted[0]:
        return False
    qualifiers, head = wanted
    for clause in clauses:
        stems = [stem(t.lower) for t in clause.tokens if t.kind in ("word", "path")]
        for i, word in enumerate(stems):
            if equivalent(word, head) and i > 0:
                before = stems[i - 1]
                if before not in lx.STOPWORDS and not any(
                    equivalent(before, q) for q in qualifiers
                ):
                    return True
    return False


def _meets_qualifier(rule: Clause, clauses: list[Clause]) -> bool:
    """The rule forbids an act done without something ("uploads without a manifest are
    refused"); a step that does the act with it, in plain words, does not break it."""
    match = _WITHOUT.search(rule.text)
    if match is None:
        return False
    words = re.findall(r"[a-z]+", match.group(1).lower())
    wanted = [stem(w) for w in words if w not in lx.STOPWORDS and w not in lx.PROHIBITION_STATES]
    plain = [s for c in clauses for s in c.stems()]
    return bool(wanted) and all(any(equivalent(w, p) for p in plain) for w in wanted)


# "without a signed manifest": what a forbidden act lacks (English).
_WITHOUT = re.compile(
    r"\bwithout\s+((?:[\w-]+\s*){1,3}?)(?=\s+(?:is|are|was|were|will|get|gets)\b|[,;]|$)", re.I
)


def _runs_inside(span: schedule.Window, clauses: list[Clause]) -> bool:
    """A time window ("not on weekends before 09:00") is broken by a step that runs inside it
    ("cron: Sundays at 06:30")."""
    when = schedule.runs_at(" ".join(c.text.replace(" : ", ":") for c in clauses))
    return when is not None and span.holds(*when)


def violated_prohibitions(
    prohibitions: list[Prohibition], dependent: Facts, surface: Surface
) -> list[Finding]:
    findings = []
    for rule, terms in prohibitions:
        span = schedule.window(rule.text)
        for source, clauses in dependent.units.items():
            if span is not None and surface.shared:
                if not _runs_inside(span, clauses):
                    continue
            elif (
                not covered(terms, step_stems(clauses), compound_stems(rule))
                or not _does_the_act(rule, clauses)
                or _other_target(rule, clauses)
                or _meets_qualifier(rule, clauses)
            ):
                continue
            text = ", ".join(c.text for c in clauses)
            findings.append(
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="new_prohibition",
                    detail=(
                        f"the revision now forbids '{rule.text}' ({rule.source}); the "
                        f"dependent does it in {source}"
                    ),
                    evidence={"revision": rule.text, "dependent": text},
                )
            )
            break
    return findings
