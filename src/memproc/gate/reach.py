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

A duty the revision carries out is shared only by those who do the same work. An imperative
("rotate the keys before release") names no one, so any procedure on the shared system may owe
it; a demand that names its subject ("night porters sign the key log", "kiosk tablets stay
on the guest network") is about that subject, and a dependent that never mentions it is not
asked about on that ground: whoever the subject is, the dependent's steps are not theirs
(`locality` already reads a definite subject, "the porter ...", before any finding). This
reads preconditions only: a step that declares a requirement speaks of the system the step
works on ("the server now requires it"), which every user of it shares. Imperatives are told
from statements by their first word: procedures write their steps as commands, so a word
that opens a step of either version, or a verb of doing in general
(`lexicon.GENERIC_VERBS`), opens a command.
"""

from __future__ import annotations

from memproc.gate.exposure import MIN_SHARED_WORDS
from memproc.gate.facts import Facts, demand_texts
from memproc.gate.lexicon import GENERIC_VERBS, words
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
_OPENERS = words("the a an our its their this these those all whoever whichever")
# Modal and auxiliary verbs, and "only", which end a subject ("updates only run at night").
_FINITE = words("must should shall need needs may can will are is was were has have only")
_SUBJECT_SPAN = 5


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
    theirs = _stems_of(dependent)
    if len(content_stems(demand) & theirs) >= MIN_SHARED_WORDS:
        return True  # the dependent works on what the demand is about
    if not _carried_out(demand, old, revision):
        return False
    if demand not in demand_texts(revision):
        return True  # declared in a step: it speaks of the system (see above)
    subject = named_subject(demand, (old, revision))
    return subject is None or bool(content_stems(" ".join(subject)) & theirs)


def named_subject(text: str, procedures: tuple[Procedure, ...]) -> list[str] | None:
    """The words a statement opens with as its subject; None for a command (see above)."""
    words = _opening_words(text)
    if not words:
        return None
    commands = {w[0] for p in procedures for s in p.steps if (w := _opening_words(s.action))}
    if words[0] in commands or words[0] in GENERIC_VERBS:
        return None
    for i, word in enumerate(words[:_SUBJECT_SPAN]):
        if i and word in _FINITE:
            return words[:i]  # "crates are sealed...", "uploads need a token"
    if words[0] in _OPENERS or words[0] in SCOPE_QUANTIFIERS:
        return words[:_SUBJECT_SPAN]
    return words[:2]  # a noun and the verb after it: "porter signs"


def _carried_out(demand: str, old: Procedure, revision: Procedure) -> bool:
    """A step the revision adds or rewrites shares a content word with the demand."""
    wanted = content_stems(demand)
    before = {step.text for step in old.steps}
    return any(
        wanted & content_stems(step.text) for step in revision.steps if step.text not in before
    )


def _opening_words(text: str) -> list[str]:
    """The first clause's words, as the gate reads them ("back up" is one word)."""
    clauses = split_clauses(text, "precondition", 0)
    return [t.lower for t in clauses[0].words] if clauses else []


def _stems_of(dependent: Facts) -> set[str]:
    theirs: set[str] = set()
    for _, text in dependent.texts:
        theirs |= content_stems(text)
    return theirs
