"""Tightened limits (timeouts, retention, rates, sizes, counts, permissions) a dependent exceeds.

A limit is a quantity in a clause that speaks of limits ("timeout", "retention", "at most",
"expire"...). It is tightened when the old version had no such limit on the same subject or
a looser one. A dependent exceeds it when one of its clauses about the same subject names a
larger quantity of the same dimension; a dependent that names none is not flagged (nothing
says it exceeds). A permission is tightened when a credential's level drops (read-only); a
dependent exceeds it when it writes with that credential.
"""

from __future__ import annotations

from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts, Limit
from memproc.gate.model import Finding
from memproc.gate.text import Clause, equivalent, has_phrase, quantities, stem

_MINIMUM_PHRASES = ("at least", "minimum", "no less than", "no fewer than")
_GENERIC = frozenset(stem(w) for w in lx.GENERIC_VERBS) | frozenset(
    stem(w) for w in ("now", "only", "read", "write", "access", "lower", "reduc", "cut")
)


def _is_minimum(limit: Limit) -> bool:
    return has_phrase(limit.clause, _MINIMUM_PHRASES)


def _shares_subject(a: list[str], b: list[str], at_least: int = 1) -> bool:
    terms = [t for t in dict.fromkeys(a) if t not in _GENERIC]
    shared = [t for t in terms if any(equivalent(t, s) for s in b)]
    return len(shared) >= min(at_least, len(terms)) and bool(shared)


def _tightened(limit: Limit, old: Facts) -> bool:
    for prior in old.limits:
        if prior.quantity.dimension != limit.quantity.dimension:
            continue
        if not _shares_subject(limit.subject, prior.subject):
            continue
        looser = (
            prior.quantity.value < limit.quantity.value
            if _is_minimum(limit)
            else prior.quantity.value > limit.quantity.value
        )
        return looser
    return True  # a limit where there was none


def tightened_limits(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    findings = []
    for limit in revision.limits:
        if not _tightened(limit, old):
            continue
        for source, clauses in dependent.units.items():
            exceeding = _exceeds(limit, clauses)
            if exceeding is None:
                continue
            findings.append(
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="tightened_limit",
                    detail=(
                        f"the revision sets the limit '{limit.clause.text}' "
                        f"({limit.clause.source}); the dependent needs {exceeding} ({source})"
                    ),
                    evidence={
                        "revision": limit.clause.text,
                        "dependent": ", ".join(c.text for c in clauses),
                    },
                )
            )
            break
    return findings


def _exceeds(limit: Limit, clauses: list[Clause]) -> str | None:
    """The quantity of one dependent unit (a step) over the limit, on the same subject."""
    if not _shares_subject(limit.subject, [s for c in clauses for s in c.stems()]):
        return None
    for quantity in (q for c in clauses for q in quantities(c)):
        if quantity.dimension != limit.quantity.dimension:
            continue
        over = (
            quantity.value < limit.quantity.value
            if _is_minimum(limit)
            else quantity.value > limit.quantity.value
        )
        if over:
            return quantity.text
    return None


def tightened_permissions(
    old: Facts, revision: Facts, dependent: Facts, at_least: int = 2
) -> list[Finding]:
    """A credential made read-only, and a dependent writing with it: its writing clause
    names the credential's subject (`at_least` of its words; more when nothing else links
    the two procedures)."""
    findings = []
    for level, clause, subject in revision.permissions:
        before = [
            prior_level
            for prior_level, _, prior in old.permissions
            if _shares_subject(subject, prior, at_least=2)
        ]
        if before and min(before) <= level:
            continue  # not tightened
        if not before and level >= lx.PERMISSION_LEVELS["write"]:
            continue
        for writer in dependent.clauses:
            if _writes(writer) and _shares_subject(subject, _context(writer, dependent), at_least):
                findings.append(
                    Finding(
                        dependent_id=dependent.procedure.id,
                        pattern="tightened_limit",
                        detail=(
                            f"the revision restricts access: '{clause.text}' ({clause.source}); "
                            f"the dependent writes with it ({writer.source})"
                        ),
                        evidence={"revision": clause.text, "dependent": writer.text},
                    )
                )
                break
    return findings


def _context(writer: Clause, dependent: Facts) -> list[str]:
    """What a writing clause speaks of: itself, and, when it names a credential by a bare noun
    ("the same token"), the whole procedure that says which."""
    stems = writer.stems()
    if {t.lower for t in writer.words} & lx.PERMISSION_SUBJECTS:
        stems = stems + dependent.all_stems + [stem(w) for w in dependent.procedure.name.split()]
    return stems


def _writes(clause: Clause) -> bool:
    return any(
        part in lx.WRITE_VERBS
        for token in clause.words
        if not token.negated
        for part in token.lower.split("-")
    )
