"""New demands a revision makes of whatever shares its surface: preconditions and prohibitions.

A demand is new when neither the old preconditions nor the old steps already met it. It is
the dependent's problem only when the dependent shares the surface, the demand is not private
to the revision (about resources only the revision touches), it is not a notification, and
the dependent does not already meet it in other words. A negated mention ("does not run
migrations") never meets a demand.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts, demand_texts, prohibited_terms
from memproc.gate.model import Finding, Similarity
from memproc.gate.surface import Surface, entities, names_entity, norm_entity
from memproc.gate.text import Clause, Token, artifacts, equivalent, split_clauses, stem

# Share of a demand's terms one step of a dependent must hold to meet it.
MEET_SHARE = 0.6
# Share of a prohibition's terms one clause must hold to violate it.
VIOLATE_SHARE = 0.75
# Cosine similarity at which the caller's semantic signal alone says a step meets a demand.
SEMANTIC_MEETS = 0.8
_GENERIC_STEMS = frozenset(stem(w) for w in lx.GENERIC_VERBS)


@dataclass
class Demand:
    text: str
    source: str
    terms: list[str]  # the content the demand asks for (anchor clause and generic verbs cut)
    verb: str | None  # a specific leading verb the dependent must also do, if any
    artifacts: set[str]


def demand(text: str, source: str) -> Demand | None:
    """Read a demand; None when it asks for nothing specific."""
    clauses = split_clauses(text, source, 0)
    terms: list[str] = []
    verb = None
    found: set[str] = set()
    for clause in clauses:
        head = _before_anchor(clause)
        for token in head:
            if token.negated or token.kind not in ("word", "number", "version", "path", "env"):
                continue
            for part in token.lower.split("-"):
                stemmed = stem(part)
                if part in lx.STOPWORDS or stemmed in _GENERIC_STEMS or not part:
                    continue
                if verb is None and not terms and token is head[0]:
                    verb = stemmed
                terms.append(stemmed)
        found |= artifacts(Clause(source, 0, clause.text, head))
    terms = list(dict.fromkeys(terms))
    return Demand(text, source, terms, verb, found) if terms else None


def _before_anchor(clause: Clause) -> list[Token]:
    """A clause cut at its first anchor word: "run migrations before push" -> "run migrations"."""
    head: list[Token] = []
    for token in clause.tokens:
        if token.kind == "word" and token.lower in lx.ANCHORS and head:
            break
        head.append(token)
    return head


def unit_stems(clauses: list[Clause], names: set[str]) -> list[str]:
    stems = [s for clause in clauses for s in clause.stems()]
    return stems + [stem(w) for name in names for w in name.split()]


def meets(d: Demand, stems: list[str]) -> bool:
    """Whether one unit of text (a step, a precondition) does what the demand asks."""
    have = [t for t in d.terms if any(equivalent(t, s) for s in stems)]
    if d.verb is not None and d.verb not in have:
        return False
    return len(have) >= math.ceil(MEET_SHARE * len(d.terms))


def units(facts: Facts) -> Iterator[tuple[str, list[Clause]]]:
    """A procedure's units of meaning: each step, each precondition, the trigger."""
    grouped: dict[str, list[Clause]] = {}
    for clause in facts.clauses:
        grouped.setdefault(clause.source, []).append(clause)
    yield from grouped.items()


# -- which demands are new -----------------------------------------------------------------------


def new_demands(old: Facts, revision: Facts) -> list[Demand]:
    """Preconditions of the revision that the old version neither stated nor did, plus added
    steps that declare a requirement ("the bucket now enforces encryption")."""
    explicit = [
        d
        for i, text in enumerate(demand_texts(revision.procedure), start=1)
        if not _forbids(text) and (d := demand(text, f"precondition {i}")) is not None
    ]
    found = [d for d in explicit if not _already(d, old)]
    for source, clauses in units(revision):
        if not source.startswith("step") or not _declares_requirement(clauses):
            continue
        d = demand(clauses[0].text, source)
        if d is None or _already(d, old) or _notification(d):
            continue
        if not any(meets(e, d.terms) for e in explicit):
            found.append(d)
    return found


def _forbids(text: str) -> bool:
    """A precondition that forbids ("never force-push to main; protection rejects it") is a
    prohibition, judged as one; the rest of its text is its reason, not a demand."""
    return any(prohibited_terms(c) for c in split_clauses(text, "precondition", 0))


def _already(d: Demand, old: Facts) -> bool:
    return any(meets(d, unit_stems(clauses, set())) for _, clauses in units(old))


def _declares_requirement(clauses: list[Clause]) -> bool:
    return any(t.lower in lx.REQUIREMENT_MARKERS for c in clauses for t in c.words)


def _notification(d: Demand) -> bool:
    return d.verb is not None and any(stem(v) == d.verb for v in lx.NOTIFY_VERBS)


def _private(d: Demand, dependent: Facts, surface: Surface) -> bool:
    """About resources only the revision touches, and naming none of the shared entities:
    "clean ./build before compiling" asks nothing of a procedure that never uses ./build."""
    if not d.artifacts or d.artifacts & dependent.mentioned:
        return False
    return not names_entity(d.text, surface.entities)


# -- detectors ---------------------------------------------------------------------------------


def unmet_preconditions(
    demands: list[Demand],
    dependent: Facts,
    surface: Surface,
    similarity: Similarity,
) -> list[Finding]:
    findings = []
    names = entities(dependent.procedure)
    for d in demands:
        if _notification(d) or _private(d, dependent, surface):
            continue
        if any(
            meets(d, unit_stems(clauses, names)) or _semantically_met(d, clauses, similarity)
            for _, clauses in units(dependent)
        ):
            continue
        findings.append(
            Finding(
                dependent_id=dependent.procedure.id,
                pattern="unmet_precondition",
                detail=(
                    f"the revision newly requires '{d.text}' ({d.source}); the dependent shares "
                    f"{surface.describe()} and none of its steps does this"
                ),
                evidence={"revision": d.text, "wanted": " ".join(d.terms)},
            )
        )
    return findings


def semantic_pairs(d: Demand, dependent: Facts) -> list[tuple[str, str]]:
    return [(d.text, text) for _, clauses in units(dependent) if (text := _plain(clauses))]


def _plain(clauses: list[Clause]) -> str | None:
    """A unit's text for the semantic signal; None if negated (similarity cannot see "not")."""
    if any(c.negated for c in clauses):
        return None
    return ", ".join(c.text for c in clauses)


def _semantically_met(d: Demand, clauses: list[Clause], similarity: Similarity) -> bool:
    text = _plain(clauses)
    return text is not None and similarity.get((d.text, text), 0.0) >= SEMANTIC_MEETS


def new_prohibitions(old: Facts, revision: Facts) -> list[tuple[Clause, list[str]]]:
    before = [terms for _, terms in old.prohibitions]
    return [
        (clause, terms)
        for clause, terms in revision.prohibitions
        if not any(_covered(terms, prior) for prior in before)
    ]


def _covered(terms: list[str], stems: list[str]) -> bool:
    have = [t for t in terms if any(equivalent(t, s) for s in stems)]
    return len(have) >= max(1, math.ceil(VIOLATE_SHARE * len(terms)))


def artifact_stems(found: set[str]) -> list[str]:
    """The words of artifact names as stems: "flag:--prune" -> ["prun"]."""
    return [stem(w) for a in found for w in norm_entity(a.split(":", 1)[1]).split()]


def violated_prohibitions(
    prohibitions: list[tuple[Clause, list[str]]], dependent: Facts, surface: Surface
) -> list[Finding]:
    findings = []
    for rule, terms in prohibitions:
        for clause in dependent.clauses:
            stems = clause.stems() + artifact_stems(artifacts(clause))
            if _covered(terms, stems):
                findings.append(
                    Finding(
                        dependent_id=dependent.procedure.id,
                        pattern="new_prohibition",
                        detail=(
                            f"the revision now forbids '{rule.text}' ({rule.source}); the "
                            f"dependent does it in {clause.source}"
                        ),
                        evidence={"revision": rule.text, "dependent": clause.text},
                    )
                )
                break
    return findings
