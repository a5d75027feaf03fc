"""An added step that deletes what a dependent reads.

A revision that adds `rm`, `DROP`, `TRUNCATE`, `purge`... of a resource named by an
identifier (a path, a URL's path, a table, a key) breaks a dependent that reads the same
identifier. A URL whose path ends with the deleted path's tail is the same file (a web
server publishes a folder), and a path inside a deleted name is gone with it
(`/orders_v2/_search` lies in the index `orders_v2`).

A deletion followed by rewriting the same resource leaves a gap. It is safe only when the
dependent cannot run inside it: it starts on a completion signal, or at a time of day
outside the stated window from the deletion to the rewrite. Nothing said about the
dependent's time: the gap can be hit, a finding. A time of day against a window the
revision does not state: a question.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from memproc.gate import identifiers, order, schedule, timeline
from memproc.gate.facts import Facts, is_producer
from memproc.gate.identifiers import Identifier
from memproc.gate.model import Finding, Step, Undecided
from memproc.gate.removed import only_negated

# Verbs that delete, in the forms a step writes them: POSIX utilities (rm, rmdir, unlink),
# SQL statements (DROP, TRUNCATE, DELETE), Redis commands (DEL, UNLINK), and the English
# verbs of the gate's removal class (lexicon.SYNONYMS: remove delete drop purge wipe) with
# erase and destroy from the destructive options `removed` reads. Emptying a cache (flush,
# clear, evict) is left out: what a cache holds is rebuilt on demand.
_VERBS = (
    r"rm|rmdir|unlink|del|delete|deletes|deleting|drop|drops|dropping|truncate|truncates|"
    r"purge|purges|wipe|wipes|erase|erases|destroy|destroys|remove|removes|removing"
)
_VERB = re.compile(rf"(?<![\w/.$-])(?:{_VERBS})(?=$|[\s_:-])", re.I)
# What ends a deletion's object (English closed classes): a clause break, a contrast or
# temporal connective, or a preposition: "from" (rows deleted from a table, a name removed
# from a list: the container stays) and the place prepositions ("remove the role on a
# bucket" deletes the role, not the bucket).
_OBJECT_END = re.compile(
    r"[;.](?:\s|$)|,\s*(?:then|and)\b|\b(?:but|except|keep|keeps|keeping|then|after|once)\b"
    r"|\b(?:from|for|on|in|at|to|into|onto|with|via|under|within)\s",
    re.I,
)
# English negators before the verb (lexicon.NEGATORS, without its verbs of leaving out).
_NEGATED = re.compile(r"\b(?:not|never|no|don't|dont|without)\b", re.I)
# Kinds that name one resource: a host or an environment variable is not what is deleted.
_RESOURCES = frozenset({"url", "path", "dotted", "snake", "camel", "kebab", "glob"})


def _step_text(step: Step) -> str:
    return f"{step.action} | {step.detail}"


def _deleted(text: str) -> list[Identifier]:
    """The identifiers a step deletes: named after a deleting verb, in the same clause."""
    found = []
    for verb in _VERB.finditer(text):
        clause_start = max(text.rfind(";", 0, verb.start()), text.rfind(". ", 0, verb.start()))
        if _NEGATED.search(text[clause_start + 1 : verb.start()]):
            continue
        rest = text[verb.end() :]
        if re.search(r"\w", rest.split("|", 1)[0]):  # the object is in the action
            rest = rest.split("|", 1)[0]
        end = _OBJECT_END.search(rest)
        found += [
            i
            for i in identifiers.find(rest[: end.start()] if end else rest)
            if i.kind in _RESOURCES and len(i.norm) > 3
        ]
    return found


def _reads(gone: Identifier, theirs: Identifier) -> bool:
    """The dependent's name is the deleted resource or lies inside it."""
    if identifiers.same(gone, theirs):
        return True
    their_path = identifiers.path_of(theirs).strip("/")
    if theirs.kind == "url" and gone.kind == "path" and their_path:
        tail, whole = their_path.split("/"), gone.norm.strip("/").split("/")
        specific = len(tail) >= 2 or "." in tail[-1]
        return specific and len(tail) <= len(whole) and whole[-len(tail) :] == tail
    if gone.kind in ("snake", "dotted", "kebab") and their_path:
        return gone.norm in their_path.split("/")
    return False


def _added_deletions(old: Facts, revision: Facts) -> Iterator[tuple[int, Identifier]]:
    """(step index, identifier) for each deletion the old version did not make."""
    before = {i.norm for s in old.procedure.steps for i in _deleted(_step_text(s))}
    for index, step in enumerate(revision.procedure.steps):
        for gone in _deleted(_step_text(step)):
            if gone.norm not in before:
                yield index, gone


def _reader(gone: Identifier, dependent: Facts) -> Identifier | None:
    """The dependent's name for the deleted resource, unless it only says it does not use
    it, or deletes it itself (a cleanup of its own)."""
    own = [i for s in dependent.procedure.steps for i in _deleted(_step_text(s))]
    if any(_reads(gone, i) for i in own):
        return None
    for theirs in dependent.identifiers:
        if _reads(gone, theirs) and not only_negated(theirs, dependent):
            return theirs
    return None


def _rewritten_at(revision: Facts, index: int, gone: Identifier) -> int | None:
    """A later step that writes the deleted resource again: a producing clause of it names
    the resource (a step that only reads or checks it writes nothing)."""
    for later in range(index + 1, len(revision.procedure.steps)):
        for clause in revision.units.get(f"step {later + 1}", []):
            named = any(identifiers.same(gone, i) for i in identifiers.find(clause.text))
            if named and is_producer(clause) and not _deleted(clause.text):
                return later
    return None


def _runs_at(dependent: Facts) -> int | str | None:
    """When the dependent runs: "event" on a completion signal, a time of day in minutes,
    or None when it does not say."""
    plan = schedule.schedule(dependent.procedure.trigger)
    if plan is not None and plan.event:
        return "event"
    return order.runs_at(dependent.procedure)


def _gap(revision: Facts, deleted: int, rewritten: int) -> tuple[float, float] | None:
    """From the start of the deleting step to the end of the rewriting one, in minutes
    after midnight; None when the revision does not state its times."""
    chain = timeline.read(revision.procedure)
    if chain.frame != "clock":
        return None
    start = chain.done[deleted - 1] if deleted > 0 else chain.done[deleted]
    return start, chain.done[rewritten]


def _hit(revision: Facts, index: int, gone: Identifier, dependent: Facts) -> bool | None:
    """Whether the dependent can read the resource while it is gone: True, False, or None
    when a time of day meets a window the revision does not state."""
    rewritten = _rewritten_at(revision, index, gone)
    if rewritten is None:
        return True
    when = _runs_at(dependent)
    if when == "event":
        return False
    if when is None:
        return True
    gap = _gap(revision, index, rewritten)
    if gap is None:
        return None
    start, end = gap
    moment = float(when) + (1440 if float(when) < start % 1440 else 0) + (start // 1440) * 1440
    return start <= moment <= end


def _verdicts(
    old: Facts, revision: Facts, dependent: Facts
) -> Iterator[tuple[int, Identifier, Identifier, bool | None]]:
    for index, gone in _added_deletions(old, revision):
        theirs = _reader(gone, dependent)
        if theirs is not None:
            yield index, gone, theirs, _hit(revision, index, gone, dependent)


def deleted_inputs(old: Facts, revision: Facts, dependent: Facts) -> list[Finding]:
    """A step the revision adds deletes what the dependent reads, and nothing shows the
    dependent cannot run while it is gone."""
    for index, gone, theirs, hit in _verdicts(old, revision, dependent):
        if hit:
            step = revision.procedure.steps[index]
            return [
                Finding(
                    dependent_id=dependent.procedure.id,
                    pattern="removed_output",
                    detail=(
                        f"the revision's step {index + 1} ('{step.action}') deletes "
                        f"{gone.text}; the dependent reads {theirs.text}"
                    ),
                    evidence={"revision": _step_text(step), "dependent": theirs.text},
                )
            ]
    return []


def undecided(old: Facts, revision: Facts, dependent: Facts) -> Undecided | None:
    """A deletion the revision rewrites later, against a dependent that runs at a time of
    day: whether it falls in the gap, the revision's stated times cannot tell."""
    for index, gone, theirs, hit in _verdicts(old, revision, dependent):
        if hit is None:
            return Undecided(
                dependent.procedure.id,
                "low_confidence",
                f"the revision deletes {gone.text} in step {index + 1} and writes it again "
                f"later; the dependent reads {theirs.text} at a time of day the revision's "
                "steps cannot be placed against",
            )
    return None
