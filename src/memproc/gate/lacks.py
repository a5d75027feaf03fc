"""A dependent that says it goes without what the revision now requires.

A revision can make something required in a step rather than a precondition: "calls
without a signature header are rejected", "reachable only over the office VPN", "clients
are expected to back off", "callers must retry", "opened only once the guard is there",
"reject unencrypted uploads", "require TLS". A dependent that states, in so many words,
that it does not do or have that thing ("no retries", "without a client certificate", "has
no VPN client") has said exactly what breaks; one that says it uses no protection at all
("in plain text", "no TLS") goes without whichever the revision now requires. Only what the
revision newly requires counts: the old version must not have required it in the same
words.
"""

from __future__ import annotations

import re

from memproc.gate import lexicon as lx
from memproc.gate.exposure import SECURITY_TERMS
from memproc.gate.facts import Facts
from memproc.gate.model import Finding
from memproc.gate.text import Clause, equivalent, stem

# How a step says something is required (English): what is refused without it, what access
# is allowed only through it, what callers are expected or required to do.
_REFUSAL = r"reject\w*|refus\w*|den(?:y|ies|ied)|fail\w*|block\w*|drop\w*|return\w*\s+4\d\d"
_REQUIRED = (
    re.compile(
        rf"\bwithout\s+(?:an?\s+|the\s+|any\s+|valid\s+)?(?P<t>[\w.-]+(?:\s+[\w.-]+){{0,2}})"
        rf"[^;]{{0,40}}?\b(?:{_REFUSAL})",
        re.I,
    ),
    re.compile(
        r"\b(?:expected|required|obliged|must|need|needs|have|has)\s+to\s+(?:\w+\s+)?(?P<t>\w+)",
        re.I,
    ),
    # a modal before a bare verb: "uploads must resume"
    re.compile(r"\b(?:must|shall)\s+(?!not\b|never\b|be\b|have\b)(?P<t>\w+)", re.I),
    re.compile(
        r"\bonly\s+(?:on|via|over|through|behind|from|with|inside|within|by|after|once)\s+"
        r"(?P<t>[^;]{1,60})",
        re.I,
    ),
    # an imperative or a statement of what is now required: "require signing on the DCs"
    re.compile(
        r"\b(?:require|requires|required|enforce|enforces|enforced)\s+(?!to\b|by\b|for\b)"
        r"(?P<t>[\w-]+(?:\s+[\w-]+)?)",
        re.I,
    ),
    # what is refused when it lacks a quality: "reject unsigned commits" requires signing
    re.compile(rf"\b(?:{_REFUSAL})\s+(?:all\s+|any\s+)?(?:un|non-?)(?P<t>\w+ed)\b", re.I),
)
# Words too general to be what a revision requires (general English and operations verbs).
_GENERAL = frozenset(stem(w) for w in lx.GENERIC_VERBS) | frozenset(
    stem(w) for w in lx.words("request requests call calls client clients user users be")
)


# Transport and message security: a dependent that says it uses none of these ("no TLS",
# "unsigned", "in plain text") goes without whichever one the revision now requires.
_SECURITY = frozenset(stem(w) for w in SECURITY_TERMS)
_INSECURE = re.compile(r"\b(?:unsigned|unencrypted|plain\s*text|plaintext|insecure)\b", re.I)


def _insecure(clause: Clause) -> bool:
    return bool(set(clause.stems(negated=True)) & _SECURITY) or bool(_INSECURE.search(clause.text))


def required_terms(text: str) -> dict[str, str]:
    """What a text says is required: content stems, each with a word that spells it."""
    found: dict[str, str] = {}
    for pattern in _REQUIRED:
        for match in pattern.finditer(text):
            for word in re.findall(r"[A-Za-z][A-Za-z-]*", match.group("t").lower()):
                for part in word.split("-"):
                    if part and part not in lx.STOPWORDS and part not in lx.NEGATORS:
                        found.setdefault(stem(part), part)
    return {s: w for s, w in found.items() if s not in _GENERAL}


def _required(facts: Facts) -> dict[str, str]:
    terms: dict[str, str] = {}
    for text in [t for _, t in facts.texts] + list(facts.procedure.preconditions):
        terms |= required_terms(text)
    return terms


def lacks_required(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """The dependent says it goes without something the revision newly requires."""
    before = _required(old)
    newly = {s: w for s, w in _required(revision).items() if s not in before}
    if not newly:
        return []
    secure = [w for s, w in newly.items() if s in _SECURITY]
    for clause in dependent.clauses:
        lacking = [s for s in clause.stems(negated=True) if s not in _GENERAL]
        shared = sorted({w for n, w in newly.items() for s in lacking if equivalent(n, s)})
        if not shared and secure and _insecure(clause):
            shared = secure  # it says it goes without any protection of its connection
        if shared:
            return [
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="unmet_precondition",
                    detail=(
                        f"the revision now requires {', '.join(shared)}; the dependent says it "
                        f"goes without it ({clause.source}: '{clause.text}')"
                    ),
                    evidence={"required": ", ".join(shared), "dependent": clause.text},
                )
            ]
    return []
