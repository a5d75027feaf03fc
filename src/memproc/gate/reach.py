"""Who a precondition binds when its author did not declare it: inferred conservatively, and
the inference is said in every finding that rests on it.

The cue is the precondition's grammatical subject. A subject that quantifies over others
("every job must...", "all teams ...", "nobody deploys ... without") binds the scope; one
that names the users of an output ("readers must...", "subscribers acknowledge ...") binds
consumers. Anything else (an imperative with no subject, a statement
about the procedure's own host or step) binds only the procedure itself: nothing in its
words reaches out to others.
"""

from __future__ import annotations

from memproc.gate.lexicon import words
from memproc.gate.model import Binds, Procedure
from memproc.gate.text import split_clauses

# Quantifiers over a whole population: English determiners and pronouns (closed classes).
SCOPE_QUANTIFIERS = words("every all any each no everyone everybody anyone anybody nobody none")
# Nouns that name the users of something a procedure offers: general software vocabulary.
CONSUMER_NOUNS = words(
    """consumer consumers client clients caller callers subscriber subscribers reader readers
    downstream dependent dependents user users integration integrations"""
)
# Words a subject may open with before its head: articles and possessives (closed classes).
_OPENERS = words("the a an our its their this these those all")


def binds_of(procedure: Procedure, text: str) -> tuple[Binds, bool]:
    """(binds, inferred): the author's declaration, else the reading of the subject."""
    declared = procedure.declared_binds(text)
    if declared is not None:
        return declared, False
    return infer(text), True


def infer(text: str) -> Binds:
    """The widest reach any clause's subject states; "self" when none states one."""
    found: Binds = "self"
    for clause in split_clauses(text, "precondition", 0):
        words = [t.lower for t in clause.words]
        subject = _subject(words)
        if not subject:
            continue
        if subject[0] in SCOPE_QUANTIFIERS and not set(subject) & CONSUMER_NOUNS:
            return "scope"
        if set(subject) & CONSUMER_NOUNS:
            found = "consumers"
    return found


def _subject(words: list[str]) -> list[str]:
    """The words before the clause's first modal or finite verb, when the clause has a
    subject at all (an imperative starts with its verb and has none)."""
    head = words[:4]
    for i, word in enumerate(head):
        if word in ("must", "should", "shall", "need", "needs", "may", "can", "will", "are", "is"):
            return head[:i]
    first = words[0] if words else ""
    if first in SCOPE_QUANTIFIERS or first in CONSUMER_NOUNS or first in _OPENERS:
        return words[:3]
    return []
