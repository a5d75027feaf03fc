"""What a procedure's text says, read once: clauses, outputs, limits, prohibitions, demands.

Detectors compare these facts between the old version, the revision and a dependent; they
never look at raw text themselves, so the reading is the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from memproc.gate import lexicon as lx
from memproc.gate.model import Procedure
from memproc.gate.text import (
    Clause,
    Quantity,
    artifacts,
    equivalent,
    formats,
    has_phrase,
    quantities,
    split_clauses,
    stem,
    versions,
)

_PERMISSION_WORD = {
    "read-only": 1,
    "readonly": 1,
    "read-write": 2,
}


@dataclass
class Limit:
    clause: Clause
    quantity: Quantity
    subject: list[str]


@dataclass
class Facts:
    """The reading of one procedure version."""

    procedure: Procedure
    clauses: list[Clause] = field(default_factory=list)

    @classmethod
    def read(cls, procedure: Procedure) -> Facts:
        facts = cls(procedure)
        for number, step in enumerate(procedure.steps, start=1):
            text = f"{step.action}, {step.detail}" if step.detail else step.action
            facts.clauses += split_clauses(text, f"step {number}", number)
        for number, condition in enumerate(demand_texts(procedure), start=1):
            facts.clauses += split_clauses(condition, f"precondition {number}", 0)
        end = len(procedure.steps) + 1
        for number, output in enumerate(procedure.outputs, start=1):
            facts.clauses += split_clauses(output, f"output {number}", end)
        if procedure.trigger:
            facts.clauses += split_clauses(procedure.trigger, "trigger", 0)
        return facts

    @property
    def step_clauses(self) -> list[Clause]:
        return [c for c in self.clauses if c.source.startswith("step")]

    @cached_property
    def all_stems(self) -> list[str]:
        return [s for clause in self.clauses for s in clause.stems()]

    @cached_property
    def mentioned(self) -> set[str]:
        """Every artifact named anywhere, not negated."""
        return {a for clause in self.clauses for a in artifacts(clause)}

    @cached_property
    def produced(self) -> dict[str, Clause]:
        """Artifacts this version outputs: named in `outputs` or by a producing step."""
        found: dict[str, Clause] = {}
        for clause in self.clauses:
            if clause.source.startswith("output") or is_producer(clause):
                for artifact in artifacts(clause):
                    found.setdefault(artifact, clause)
        return found

    @cached_property
    def output_clauses(self) -> list[Clause]:
        return [c for c in self.clauses if c.source.startswith("output") or is_producer(c)]

    @cached_property
    def limits(self) -> list[Limit]:
        found = []
        for clause in self.clauses:
            if is_limit(clause):
                subject = [s for s in clause.stems() if not _is_unit_or_limit(s)]
                for quantity in quantities(clause, periods=True):
                    found.append(Limit(clause, quantity, subject))
        return found

    @cached_property
    def permissions(self) -> list[tuple[int, Clause]]:
        return [(level, c) for c in self.clauses if (level := permission_level(c)) is not None]

    @cached_property
    def prohibitions(self) -> list[tuple[Clause, list[str]]]:
        return [(c, terms) for c in self.clauses if (terms := prohibited_terms(c))]

    def mentions_stems(self, terms: list[str]) -> bool:
        return all(any(equivalent(t, s) for s in self.all_stems) for t in terms)


def demand_texts(procedure: Procedure) -> list[str]:
    """Preconditions as text, structured ones as "key value"."""
    return list(procedure.preconditions) + [f"{k} {v}" for k, v in procedure.conditions]


def is_producer(clause: Clause) -> bool:
    words = [t.lower for t in clause.words if not t.negated]
    return bool(words) and (
        words[0] in lx.PRODUCER_VERBS or any(w in ("into", "to", "as") for w in words)
    )


def is_limit(clause: Clause) -> bool:
    words = {t.lower for t in clause.words}
    return bool(words & lx.LIMIT_WORDS) or has_phrase(clause, lx.LIMIT_PHRASES)


def _is_unit_or_limit(term: str) -> bool:
    return any(stem(w) == term for w in (*lx.LIMIT_WORDS, *lx.TIME_UNITS, *lx.SIZE_UNITS)) or (
        term.replace(".", "").isdigit()
    )


def permission_level(clause: Clause) -> int | None:
    """The access level a clause grants, when it speaks of a credential's permission:
    "the deploy key is now read-only" -> 1."""
    words = [t.lower for t in clause.words if not t.negated]
    if not set(words) & lx.PERMISSION_SUBJECTS:
        return None
    for i, word in enumerate(words):
        if word in _PERMISSION_WORD:
            return _PERMISSION_WORD[word]
        following = words[i + 1] if i + 1 < len(words) else ""
        qualified = following in ("access", "permission", "permissions", "scope", "role", "only")
        if word in lx.PERMISSION_LEVELS and qualified:
            return lx.PERMISSION_LEVELS[word]
    return None


def prohibited_terms(clause: Clause) -> list[str]:
    """The content a prohibition forbids, or [] when the clause forbids nothing.

    Forms: a leading negator or "never"/"avoid"/"stop" ("never force-push to main", "do not
    write to the orders table", "no direct writes"), "must not", and passive states
    ("classic tokens are deprecated", "no longer accepted")."""
    words = [t.lower for t in clause.words]
    if not words:
        return []
    lead = words[0] in lx.PROHIBITION_LEADS or words[0] in ("no", "don't", "dont", "do")
    lead = lead and (words[0] != "do" or words[1:2] == ["not"])
    must_not = any(
        words[i] in ("must", "should", "may") and words[i + 1] in ("not", "never")
        for i in range(len(words) - 1)
    )
    passive = bool(set(words) & lx.PROHIBITION_STATES) or has_phrase(clause, ["no longer"])
    if not (lead or must_not or passive):
        return []
    markers = lx.PROHIBITION_LEADS | lx.PROHIBITION_STATES | lx.NEGATORS
    terms = []
    for token in clause.tokens:
        if token.kind not in ("word", "path", "env", "code", "flag", "version"):
            continue
        for part in token.lower.split("-"):
            if part in markers or part in lx.STOPWORDS or part in lx.GENERIC_VERBS:
                continue
            if part in ("longer", "allowed", "permitted", "accepted", "supported", "works"):
                continue
            terms.append(stem(part))
    return list(dict.fromkeys(terms))
