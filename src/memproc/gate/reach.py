"""Who a precondition binds when its author did not declare it: inferred conservatively, and
the inference is said in every finding that rests on it.

The cue is the precondition's grammatical subject. A subject that quantifies over others
("every job must...", "all teams ...", "nobody deploys ... without") binds the scope; one
that names the users of an output ("readers must...", "subscribers acknowledge ...") binds
consumers. Anything else (an imperative with no subject, a statement
about the procedure's own host or step) binds only the procedure itself: nothing in its
words reaches out to others.

When a shared surface is all that ties an unmet demand to a dependent, the gate asks whether
it binds the dependent (`worth_asking`) when the revision carries the demand out in a step it
adds or rewrites (a duty it newly performs is one a dependent doing the same work may share),
or when the dependent works on what the demand is about (its steps hold two or more of the
demand's words, the bar `exposure` sets for a changed text). A demand that no step of the
revision touches and whose words the dependent barely holds states a condition of the
revision's own setting (a room, a vehicle, a store kept at a temperature) far more often than
a duty of others: on the labelled sets nine such questions in ten were about safe pairs.
Such a pair is not asked about on that ground alone; triage scores it with the other pairs
the rules passed.
"""

from __future__ import annotations

from memproc.gate.exposure import MIN_SHARED_WORDS
from memproc.gate.facts import Facts
from memproc.gate.lexicon import words
from memproc.gate.model import Binds, Procedure
from memproc.gate.text import content_stems, split_clauses

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


def worth_asking(demand: str, old: Procedure, revision: Procedure, dependent: Facts) -> bool:
    """Whether an unmet demand of inferred reach is a question for the judge (see above)."""
    return _carried_out(demand, old, revision) or _works_on(demand, dependent)


def _carried_out(demand: str, old: Procedure, revision: Procedure) -> bool:
    """A step the revision adds or rewrites shares a content word with the demand."""
    wanted = content_stems(demand)
    before = {step.text for step in old.steps}
    return any(
        wanted & content_stems(step.text) for step in revision.steps if step.text not in before
    )


def _works_on(demand: str, dependent: Facts) -> bool:
    theirs: set[str] = set()
    for _, text in dependent.texts:
        theirs |= content_stems(text)
    return len(content_stems(demand) & theirs) >= MIN_SHARED_WORDS
