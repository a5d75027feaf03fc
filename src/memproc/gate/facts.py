"""What a procedure's text says, read once: clauses, outputs, limits, prohibitions, demands.

Detectors compare these facts between the old version, the revision and a dependent; they
never look at raw text themselves, so the reading is the same everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from memproc.gate import lexicon as lx
from memproc.gate.identifiers import Identifier, split_words
from memproc.gate.identifiers import find as find_identifiers
from memproc.gate.model import Procedure
from memproc.gate.text import (
    Clause,
    Quantity,
    Token,
    artifacts,
    equivalent,
    has_phrase,
    quantities,
    split_clauses,
    stem,
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

    @cached_property
    def texts(self) -> list[tuple[str, str]]:
        """(source, raw text) of each unit: steps (action and detail), outputs, trigger."""
        found = []
        for number, step in enumerate(self.procedure.steps, start=1):
            found.append((f"step {number}", f"{step.action} | {step.detail}"))
        for number, output in enumerate(self.procedure.outputs, start=1):
            found.append((f"output {number}", output))
        if self.procedure.trigger:
            found.append(("trigger", self.procedure.trigger))
        return found

    @cached_property
    def identifiers(self) -> list[Identifier]:
        """Identifiers of the steps, outputs and trigger (see `identifiers`)."""
        found: list[Identifier] = []
        for _, text in self.texts:
            found += find_identifiers(text)
        return found

    @cached_property
    def precondition_identifiers(self) -> list[Identifier]:
        found: list[Identifier] = []
        for text in demand_texts(self.procedure):
            found += find_identifiers(text)
        return found

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
    def units(self) -> dict[str, list[Clause]]:
        """Clauses grouped by where they came from: a step's action and detail are one unit
        ("keep reports in /srv/reports", "expire after 20 days": the subject is in the
        first)."""
        grouped: dict[str, list[Clause]] = {}
        for clause in self.clauses:
            grouped.setdefault(clause.source, []).append(clause)
        return grouped

    @cached_property
    def output_clauses(self) -> list[Clause]:
        """Clauses that name what this version outputs: `outputs`, every clause of a step
        led by a producing verb, and producing clauses elsewhere."""
        found = []
        for source, clauses in self.units.items():
            if source.startswith("output") or (
                source.startswith("step") and is_producer(clauses[0])
            ):
                found += clauses
            else:
                found += [c for c in clauses if is_producer(c)]
        return found

    @cached_property
    def produced(self) -> dict[str, Clause]:
        """Artifacts this version outputs, with the clause that names each first."""
        found: dict[str, Clause] = {}
        for clause in self.output_clauses:
            for artifact in artifacts(clause):
                found.setdefault(artifact, clause)
        return found

    @cached_property
    def limits(self) -> list[Limit]:
        found = []
        for source, clauses in self.units.items():
            subject = [s for c in clauses for s in c.stems() if not _is_unit_or_limit(s)]
            # A step titled by a limit word ("Quota | 40 uploads an hour") states
            # the limit in the clause after its title.
            titled = source.startswith("step") and is_limit(clauses[0])
            titled = titled and not quantities(clauses[0], periods=True)
            for n, clause in enumerate(clauses):
                if is_limit(clause) or (titled and n == 1):
                    for quantity in quantities(clause, periods=True):
                        found.append(Limit(clause, quantity, subject))
        return found

    @cached_property
    def permissions(self) -> list[tuple[int, Clause, list[str]]]:
        """(level, clause, the stems of its whole unit) for each clause granting a level."""
        found = []
        name = [stem(w) for w in self.procedure.name.lower().split()]
        for clauses in self.units.values():
            subject = [s for c in clauses for s in c.stems()] + name
            # the words inside names count: "policies/bucket.writerRole" speaks of a role
            subject += [
                stem(w)
                for c in clauses
                for i in find_identifiers(c.text)
                for w in split_words(i.text)
                if len(w) > 2
            ]
            for clause in clauses:
                level = permission_level(clause, subject)
                if level is not None:
                    found.append((level, clause, subject))
        return found

    def mentions_stems(self, terms: list[str]) -> bool:
        return all(any(equivalent(t, s) for s in self.all_stems) for t in terms)


def demand_texts(procedure: Procedure) -> list[str]:
    """Preconditions as text, structured ones as "key value"."""
    return list(procedure.preconditions) + [f"{k} {v}" for k, v in procedure.conditions]


_PRODUCER_STEMS = frozenset(stem(w) for w in lx.PRODUCER_VERBS)


def is_producer(clause: Clause) -> bool:
    words = [t.lower for t in clause.words if not t.negated]
    return bool(words) and (
        stem(words[0]) in _PRODUCER_STEMS or any(w in ("into", "to", "as") for w in words)
    )


def is_limit(clause: Clause) -> bool:
    words = {t.lower for t in clause.words}
    return bool(words & lx.LIMIT_WORDS) or has_phrase(clause, lx.LIMIT_PHRASES)


def _is_unit_or_limit(term: str) -> bool:
    return any(stem(w) == term for w in (*lx.LIMIT_WORDS, *lx.TIME_UNITS, *lx.SIZE_UNITS)) or (
        term.replace(".", "").isdigit()
    )


def permission_level(clause: Clause, unit: list[str]) -> int | None:
    """The access level a clause grants, when its unit speaks of a credential's permission:
    "issue the service token, read-only access" -> 1."""
    words = [w for t in clause.words if not t.negated for w in t.lower.split("_")]
    subjects = {stem(w) for w in lx.PERMISSION_SUBJECTS}
    if not (set(words) & lx.PERMISSION_SUBJECTS or subjects & set(unit)):
        return None
    for i, word in enumerate(words):
        if word in _PERMISSION_WORD:
            return _PERMISSION_WORD[word]
        following = words[i + 1 : i + 3]  # "read access", "read_repo scope"
        qualified = bool(set(following) & _QUALIFIERS)
        if word in lx.PERMISSION_LEVELS and qualified:
            return lx.PERMISSION_LEVELS[word]
    return None


_QUALIFIERS = lx.words("access permission permissions scope scopes role only")


def prohibited_terms(clause: Clause) -> list[str]:
    """The content a prohibition forbids, or [] when the clause forbids nothing.

    Forms: a leading negator or "never"/"avoid"/"stop" ("never rewrite tags", "do not write
    to the ledger table", "no manual edits"), "must not", and passive states ("basic auth is
    deprecated", "no longer accepted")."""
    words = [t.lower for t in clause.words]
    while words and words[0] in ("and", "but", "or", "so"):
        words = words[1:]
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
    tokens = clause.tokens
    if passive and not (lead or must_not):
        tokens = _before_state(tokens)  # "X is deprecated on ...": X is what is forbidden
    if words[0] == "no":
        tokens = _after_subject(tokens)  # "no role but the owner may create ...": the act
    terms = []
    for token in tokens:
        if token.kind == "code":  # `legacy:admin`: each name in the span, whole
            terms += code_names(token)
            continue
        if token.kind not in ("word", "path", "env", "flag", "version"):
            continue
        for part in token.lower.split("-"):
            if not part or part in markers or part in lx.STOPWORDS or part in lx.GENERIC_VERBS:
                continue
            if part in ("longer", "allowed", "permitted", "accepted", "supported", "works"):
                continue
            terms.append(stem(part))
    return list(dict.fromkeys(terms))


def code_names(token: Token) -> list[str]:
    """The names a code span holds, whole and lowercased: `reports:read legacy:admin` holds
    two. A prohibition names a scope, key or command this way, and a step that uses it names
    it the same way, so the two are compared as names, not split into words."""
    return [name for name in token.lower.strip("`").replace(",", " ").split() if name]


# English modals: in "no <subject> may <act>", what stands before one says who is forbidden.
_MODALS = frozenset(("may", "can", "shall", "should", "must", "will"))
# How far into a clause the subject of "no ... may" may reach, in words.
_SUBJECT_WORDS = 8


def _after_subject(tokens: list[Token]) -> list[Token]:
    """The forbidden act of "no <subject> <modal> <act>": who is forbidden is not what a
    dependent must be seen doing."""
    words = [i for i, t in enumerate(tokens) if t.kind == "word"]
    for i in words[1 : _SUBJECT_WORDS + 1]:
        if tokens[i].lower in _MODALS:
            return tokens[i + 1 :]
    return tokens


def forbidden_verb(clause: Clause) -> str | None:
    """The verb of the act "no <subject> <modal> <act>" forbids, as a stem: a dependent must do
    that act ("write into the ledger"), not merely name its object ("read the ledger")."""
    words = [t.lower for t in clause.words]
    if not words or words[0] != "no":
        return None
    act = _after_subject(clause.tokens)
    if len(act) == len(clause.tokens):
        return None
    verb = next((t for t in act if t.kind == "word" and t.lower not in lx.NEGATORS), None)
    return stem(verb.lower) if verb is not None else None


def _before_state(tokens: list[Token]) -> list[Token]:
    for i, token in enumerate(tokens):
        word = token.lower
        no_longer = word == "no" and i + 1 < len(tokens) and tokens[i + 1].lower == "longer"
        if word in lx.PROHIBITION_STATES or no_longer:
            return tokens[:i] or tokens
    return tokens
