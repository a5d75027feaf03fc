"""Declared contracts, decided exactly: `produces`, `consumes` and who a precondition binds.

Where the revised procedure declares its outputs and the dependent its inputs, the gate
decides from the contracts alone, and each finding cites the field it rests on:

- an output the dependent consumes is gone (removed) or gone with a new id beside it (renamed);
- its format or location changed (unless the dependent declares the new format);
- its version left the dependent's constraint (a consumer declaring none accepts any);
- its `available_after` moved past the dependent's schedule (clock or offset, from `trigger`);
- a new precondition binding `consumers` (when the dependent consumes from it) or `scope`
  that the dependent does not meet. Undeclared reach is inferred (see `reach`), and said so.
  Whether a dependent meets a demand is read from text, which is not exact: one that holds
  part of what is asked may do it in words the rules do not know, so that pair is asked of a
  judge; only one that shares nothing of the demand (or does the act too rarely) breaks.

Changes to outputs nobody here consumes, new outputs, and `self` preconditions are safe.
"""

from __future__ import annotations

from memproc.gate import demands, prohibitions, reach, schedule, templates
from memproc.gate.facts import Facts, demand_texts, prohibited_terms
from memproc.gate.identifiers import normalize
from memproc.gate.model import Consumed, Finding, Procedure, Produced, Undecided
from memproc.gate.surface import Surface, norm_entity
from memproc.gate.text import split_clauses
from memproc.gate.versions import satisfies


def declared(old: Procedure, revision: Procedure, dependent: Procedure) -> bool:
    """Both sides declare contracts: the revised procedure its outputs, the dependent its
    inputs. Then the contracts alone decide the pair."""
    return bool(old.produces or revision.produces) and bool(dependent.consumes)


def linked(old: Procedure, revision: Procedure, dependent: Procedure) -> list[Consumed]:
    """The dependent's inputs that come from the revised procedure: named by `from`, or, with
    no `from`, an id the revised procedure produces."""
    names = {norm_entity(old.name), norm_entity(revision.name)}
    ids = {p.id for p in (*old.produces, *revision.produces)}
    return [
        c
        for c in dependent.consumes
        if (norm_entity(c.source) in names if c.source else c.id in ids)
    ]


def decide(
    old: Procedure, revision: Procedure, dependent: Procedure
) -> tuple[list[Finding], list[Undecided]]:
    findings: list[Finding] = []
    undecided: list[Undecided] = []
    inputs = linked(old, revision, dependent)
    for consumed in inputs:
        found, open_question = _output(old, revision, dependent, consumed)
        findings += found
        undecided += open_question
    bound, unsure = _bound_preconditions(old, revision, dependent, inputs)
    findings += bound
    return findings, ([] if findings else undecided + unsure)


def _by_id(produces: tuple[Produced, ...], output_id: str) -> Produced | None:
    return next((p for p in produces if p.id == output_id), None)


def _finding(dependent: Procedure, pattern: str, detail: str, **evidence: str) -> Finding:
    return Finding(dependent.id, pattern, detail, evidence)


def _output(
    old: Procedure, revision: Procedure, dependent: Procedure, consumed: Consumed
) -> tuple[list[Finding], list[Undecided]]:
    before, after = _by_id(old.produces, consumed.id), _by_id(revision.produces, consumed.id)
    if before is None and after is None:
        return [], []  # neither version declares it: the contract says nothing
    if after is None:
        return [_gone(old, revision, dependent, consumed)], []
    findings = [
        *_changed_format(dependent, consumed, before, after),
        *_changed_version(dependent, consumed, before, after),
        *_changed_location(dependent, consumed, before, after),
    ]
    timing, question = _moved_later(revision, dependent, consumed, before, after)
    findings += timing
    return findings, question


def _gone(old: Procedure, revision: Procedure, dependent: Procedure, c: Consumed) -> Finding:
    old_ids = {p.id for p in old.produces}
    new_ids = [p.id for p in revision.produces if p.id not in old_ids]
    if new_ids:
        return _finding(
            dependent,
            "renamed_output",
            f"the revision no longer produces {c.id} (it now produces {', '.join(new_ids)}); "
            f"the dependent declares it consumes {c.id}",
            contract=f"produces[id={c.id}]",
            old=c.id,
            new=", ".join(new_ids),
            consumes=f"consumes[id={c.id}]",
        )
    return _finding(
        dependent,
        "removed_output",
        f"the revision no longer produces {c.id}; the dependent declares it consumes it",
        contract=f"produces[id={c.id}]",
        old=c.id,
        new="",
        consumes=f"consumes[id={c.id}]",
    )


def _changed_format(
    dependent: Procedure, c: Consumed, before: Produced | None, after: Produced
) -> list[Finding]:
    wanted = c.format or (before.format if before else None)
    if not wanted or not after.format or _same(wanted, after.format):
        return []
    return [
        _finding(
            dependent,
            "changed_format",
            f"{c.id} is now produced as {after.format}; the dependent consumes it as {wanted}",
            contract=f"produces[id={c.id}].format",
            old=(before.format if before and before.format else wanted),
            new=after.format,
            consumes=f"consumes[id={c.id}].format={wanted}",
        )
    ]


def _changed_version(
    dependent: Procedure, c: Consumed, before: Produced | None, after: Produced
) -> list[Finding]:
    if not after.version:
        return []
    old_version = before.version if before else None
    if not c.version or satisfies(after.version, c.version):
        return []  # a consumer that declares no version range accepts any
    why = f"outside the dependent's constraint {c.version}"
    return [
        _finding(
            dependent,
            "changed_version",
            f"{c.id} is now version {after.version}, {why}",
            contract=f"produces[id={c.id}].version",
            old=old_version or "",
            new=after.version,
            consumes=f"consumes[id={c.id}].version={c.version or ''}",
        )
    ]


def _changed_location(
    dependent: Procedure, c: Consumed, before: Produced | None, after: Produced
) -> list[Finding]:
    if before is None or not before.location or not after.location:
        return []
    same_place = normalize(before.location) == normalize(after.location)
    if same_place and not templates.reordered(before.location, after.location):
        return []  # the same place: case, a trailing slash, placeholder names aside
    return [
        _finding(
            dependent,
            "changed_location",
            f"{c.id} moved from {before.location} to {after.location}; the dependent "
            "consumes it from its declared place",
            contract=f"produces[id={c.id}].location",
            old=before.location,
            new=after.location,
            consumes=f"consumes[id={c.id}]",
        )
    ]


def _moved_later(
    revision: Procedure, dependent: Procedure, c: Consumed, before: Produced | None, after: Produced
) -> tuple[list[Finding], list[Undecided]]:
    if before is None or not before.available_after or not after.available_after:
        return [], []
    old_at = schedule.available_after(before.available_after)
    new_at = schedule.available_after(after.available_after)
    when = schedule.schedule(dependent.trigger)
    if old_at is None or new_at is None or not schedule.later(old_at, new_at):
        return [], []  # earlier, unchanged, or not comparable: nothing becomes late
    if when is None or when.event or when.moment is None:
        return [], []  # the dependent waits for the output, not for a time
    start = schedule.clock(revision.trigger) if revision.trigger else None
    missed = schedule.misses(old_at, new_at, when.moment, start)
    evidence = {
        "contract": f"produces[id={c.id}].available_after",
        "old": before.available_after,
        "new": after.available_after,
        "consumes": f"trigger={dependent.trigger}",
    }
    if missed is None:
        detail = (
            f"{c.id} is now available after {after.available_after} (was "
            f"{before.available_after}); the dependent runs '{dependent.trigger}', and the "
            "two cannot be put on one clock"
        )
        return [], [Undecided(dependent.id, "low_confidence", detail)]
    if not missed:
        return [], []
    detail = (
        f"{c.id} is now available after {after.available_after} (was "
        f"{before.available_after}), later than the dependent's schedule '{dependent.trigger}'"
    )
    return [Finding(dependent.id, "later_output", detail, evidence)], []


def _same(a: str, b: str) -> bool:
    return a.strip().lower() == b.strip().lower()


# -- preconditions with a reach ------------------------------------------------------------------


def _consumes_named(text: str, revision: Procedure, inputs: list[Consumed]) -> bool:
    """A consumer-bound precondition that names outputs binds the consumers of those."""
    named = {p.id for p in revision.produces if p.id in text}
    return bool(inputs) and (not named or any(c.id in named for c in inputs))


def _bound_preconditions(
    old: Procedure, revision: Procedure, dependent: Procedure, inputs: list[Consumed]
) -> tuple[list[Finding], list[Undecided]]:
    """New preconditions that reach the dependent (by declared or inferred `binds`) and that
    it does not meet, or whose prohibition it breaks; and those it may meet in words the
    rules cannot weigh (see `demands.partly_met`), as questions."""
    findings: list[Finding] = []
    unsure: list[Undecided] = []
    old_facts = Facts.read(old)
    dependent_facts = Facts.read(dependent)
    for number, text in enumerate(demand_texts(revision), start=1):
        if text in demand_texts(old):
            continue
        binds, inferred = reach.binds_of(revision, text)
        if binds == "self" or (
            binds == "consumers" and not _consumes_named(text, revision, inputs)
        ):
            continue
        label = f"{binds} (inferred)" if inferred else binds
        for finding in _against(text, f"precondition {number}", old_facts, dependent_facts):
            evidence = {**finding.evidence, "contract": f"preconditions[binds={label}]"}
            detail = f"{finding.detail}; the precondition binds {label}"
            cited = Finding(finding.dependent_id, finding.pattern, detail, evidence)
            if _partly_met(text, finding, dependent_facts):
                unsure.append(_ask_partly_met(cited))
            else:
                findings.append(cited)
    return findings, unsure


def _partly_met(text: str, finding: Finding, dependent: Facts) -> bool:
    if finding.pattern != "unmet_precondition":
        return False  # a broken prohibition is not met in other words
    wanted = demands.demand(text, "precondition")
    names = demands.context_names(dependent.procedure)
    return wanted is not None and demands.partly_met(wanted, dependent, names)


def _ask_partly_met(finding: Finding) -> Undecided:
    detail = (
        f"{finding.detail}, but it holds part of what is asked: whether it does the act in "
        "other words is for a judge"
    )
    return Undecided(finding.dependent_id, "low_confidence", detail, (finding,))


def _against(text: str, source: str, old: Facts, dependent: Facts) -> list[Finding]:
    """One precondition against one dependent: its demand unmet (when new), or its
    prohibition broken."""
    clauses = split_clauses(text, source, 0)
    ruled = [(c, terms) for c in clauses if (terms := prohibited_terms(c))]
    findings = prohibitions.violated_prohibitions(ruled, dependent, Surface())
    wanted = demands.demand(text, source)
    if wanted is None or demands.already(wanted, old):
        return findings  # nothing asked, or the old version asked it in other words
    if not demands.fulfils(wanted, dependent, demands.context_names(dependent.procedure)):
        findings.append(
            Finding(
                dependent.procedure.id,
                "unmet_precondition",
                f"the revision newly requires '{text}' ({source}); the dependent does not",
                {"revision": text, "wanted": " ".join(wanted.terms)},
            )
        )
    return findings
