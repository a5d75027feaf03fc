"""Whether a new demand is local to the revised procedure: about its own resources, its own
host or machine, or a setting of its own command, so that it asks nothing of a dependent.

A demand that reaches out (a declared `binds`, or a subject that speaks for others) is never
local. Otherwise it is local when it names resources only the revision touches ("empty
./tmp/render first"), when it is located on a host the dependent never names ("on the render
farm", "the packaging box must ...", "the kiosk needs ..."), when its subject is a definite
thing the dependent never names ("the notary checks ..."), or when it is a setting of one
of the revision's commands that the dependent never runs (`--worker-threads 16` of its
`encode-video`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from memproc.gate import identifiers, values
from memproc.gate import lexicon as lx
from memproc.gate.facts import Facts
from memproc.gate.model import Procedure
from memproc.gate.surface import Surface, names_entity, norm_entity
from memproc.gate.text import equivalent, split_clauses, stem

if TYPE_CHECKING:
    from memproc.gate.demands import Demand

# Nouns for where a procedure runs (general operations vocabulary).
ENVIRONMENT_NOUNS = lx.words(
    """host hosts machine machines runner runners agent agents node nodes server servers box
    boxes workstation workstations laptop laptops vm vms instance instances cluster clusters
    executor executors worker workers fleet farm"""
)


def local_to_revision(d: Demand, revision: Facts, dependent: Facts, surface: Surface) -> bool:
    """The demand concerns only the revision's own resources, host or command."""
    if d.reaches:
        return False
    return (
        _private(d, dependent, surface)
        or _elsewhere(d, dependent, surface)
        or _own_setting(d, revision, dependent)
    )


def _private(d: Demand, dependent: Facts, surface: Surface) -> bool:
    """About resources only the revision touches, and naming none of the shared entities:
    "empty ./tmp/render first" asks nothing of a procedure that never uses ./tmp/render."""
    if not d.artifacts or d.artifacts & dependent.mentioned:
        return False
    mine = identifiers.find(d.text)
    if any(identifiers.same(a, b) for a in mine for b in dependent.identifiers):
        return False  # ftp://drop is where the dependent writes ftp://drop/in/
    words = " ".join(t.text for c in split_clauses(d.text, "", 0) for t in c.words)
    return not names_entity(words, surface.entities)  # a name inside a path does not count


_ON_PLACE = re.compile(
    r"\b(on|in|into|at)\s+(?:the|every|each|all|a|an|our|its|any)\s+((?:[\w.-]+\s+){0,2}[\w.-]+)",
    re.I,
)


def _elsewhere(d: Demand, dependent: Facts, surface: Surface) -> bool:
    """Located on a host or machine ("on the render farm", "the packaging box must") that the
    dependent never names: a demand on that environment, not on the dependent."""
    places = _places(d.text)
    if not places:
        return False
    text = f" {' '.join(norm_entity(t) for _, t in dependent.texts)} "
    for place in places:
        if names_entity(place, surface.entities):
            return False
        words = [w for w in norm_entity(place).split() if w not in lx.STOPWORDS]
        if words and all(f" {w}" in text for w in words):
            return False
    return True


# A subject (with or without its determiner) and the verb that states what it must have or
# be: "the packaging box must ...", "staging kiosk has a spare battery".
_SUBJECT_PLACE = re.compile(
    r"\s*(?:(?:the|every|each|all|our)\s+)?((?:[\w.-]+\s+){0,2}?[\w.-]+?)\s+"
    r"(?:must|needs?|requires?|should|has|have)\b",
    re.I,
)


def _places(text: str) -> list[str]:
    found = []
    for match in _ON_PLACE.finditer(text):
        words = []
        for word in match.group(2).split():
            if word.lower() in lx.STOPWORDS or word.lower() in lx.ANCHORS or word.isdigit():
                break
            words.append(word)
        # "on the X" places anything; "in/into/at the X" only a host or machine
        if words and (match.group(1).lower() == "on" or words[-1].lower() in ENVIRONMENT_NOUNS):
            found.append(" ".join(words))
    subject = _SUBJECT_PLACE.match(text)
    if subject and subject.group(1).split()[-1].lower() in ENVIRONMENT_NOUNS:
        found.append(subject.group(1))
    elif named := _definite_subject(text):
        found.append(named)
    return found


# A definite subject and its verb: "the label printer keeps ...", "the build host runs
# ...". A modal or a form of "be" ends the subject where there is one in its first words;
# otherwise the first word ending in -s after the head does (a verb in the third person).
_DEFINITE = re.compile(r"\s*(?:the|this|our)\s+((?:[\w.-]+\s+){0,3})", re.I)
_FINITE = lx.words("must should shall may can will is are was were has have requires needs")
# Verbs by which a subject demands of others rather than does ("the server requires TLS"):
# the subject is then the one that asks, and the demand is on whoever uses it.
_DEMANDING = lx.words("requires needs enforces expects accepts rejects allows")


def _definite_subject(text: str) -> str | None:
    """The thing a demand is stated about when it names one with a definite article ("the
    notary checks ..."): a demand on that thing, as on a host, asks nothing of a dependent
    that never names it."""
    match = _DEFINITE.match(text)
    if match is None:
        return None
    words = match.group(1).split()
    verb = next((i for i, w in enumerate(words) if i and w.lower() in _FINITE), None)
    if verb is None:
        verb = next((i for i, w in enumerate(words) if i and _third_person(w.lower())), None)
    if verb is None or words[verb].lower() in _DEMANDING:
        return None
    subject = words[:verb]
    if any(w.lower() in lx.STOPWORDS for w in subject):
        return None  # "the server now ...": not a plain noun phrase
    return " ".join(subject)


def _third_person(word: str) -> bool:
    return word.endswith("s") and not word.endswith("ss") and word not in lx.STOPWORDS


def _own_setting(d: Demand, revision: Facts, dependent: Facts) -> bool:
    """The demand is a setting of one of the revision's own commands (`--worker-threads 16`
    of its `encode-video`), and the dependent never runs that command."""
    for number, step in enumerate(revision.procedure.steps, start=1):
        command = _command_of(step.action)
        if command is None:
            continue
        found = values.settings_of_text(f"{step.action} {step.detail}", f"step {number}")
        for setting in found:
            words = [stem(w) for w in setting.words if len(w) > 2]
            if len(words) >= 2 and all(any(equivalent(w, t) for t in d.terms) for w in words):
                return not _runs(dependent.procedure, command)
    return False


def _command_of(action: str) -> str | None:
    words = action.split()
    if len(words) < 2 or not re.fullmatch(r"[a-z][\w.-]*", words[0]):
        return None
    return words[0]


def _runs(procedure: Procedure, command: str) -> bool:
    return any(step.action.split()[:1] == [command] for step in procedure.steps)
