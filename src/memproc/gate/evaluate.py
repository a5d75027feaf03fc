"""The gate itself: read the two versions once, then decide each candidate dependent.

A pair whose both sides declare contracts is decided by the contracts alone
(`contracts.decide`). Any other pair goes to the rules, which only run on candidates that
share a relevant surface with the revision; each rule returns findings that explain
themselves. What the rules cannot decide is returned as undecided, for a judge or the
configured policy. The order of findings is stable (candidates in the order given, rules in
a fixed order), so the same input always gives the same output.
"""

from __future__ import annotations

from collections.abc import Sequence

from memproc.gate import (
    bounds,
    contracts,
    crossings,
    deletions,
    delimiters,
    demands,
    exposure,
    grants,
    hours,
    knowledge,
    lacks,
    layouts,
    limits,
    measures,
    order,
    outputs,
    prohibitions,
    reach,
    removed,
    triage,
)
from memproc.gate.facts import Facts
from memproc.gate.model import Assessment, Finding, Procedure, Signals, Similarity, Undecided
from memproc.gate.surface import Surface, names_entity, shared_surface


def assess(
    old: Procedure,
    revision: Procedure,
    candidates: Sequence[Procedure],
    signals: Signals | None = None,
) -> Assessment:
    """Findings against each candidate dependent the revision may break, and the pairs the
    gate leaves undecided."""
    signals = signals or Signals()
    result = Assessment()
    reading = _Reading(old, revision, signals)
    for candidate in candidates:
        if candidate.id in (old.id, revision.id):
            continue
        if contracts.declared(old, revision, candidate):
            found, undecided = contracts.decide(old, revision, candidate)
            result.findings.extend(found)
            result.undecided.extend(undecided)
            continue
        findings, undecided = reading.rules(candidate)
        result.findings.extend(_one_per_pattern(findings))
        result.undecided.extend(undecided)
    return result


def triage_features(
    old: Procedure, revision: Procedure, candidate: Procedure
) -> tuple[float, ...] | str:
    """What triage scores the pair on, or what decided it instead: "contracts", "finding"
    (a sure one) or "question" (the rules' own)."""
    if contracts.declared(old, revision, candidate):
        return "contracts"
    return _Reading(old, revision, Signals()).triage_features(candidate)


def _one_per_pattern(findings: list[Finding]) -> list[Finding]:
    """The first finding of each pattern: several rules may see the same break."""
    seen: set[str] = set()
    kept = []
    for finding in findings:
        if finding.pattern not in seen:
            seen.add(finding.pattern)
            kept.append(finding)
    return kept


def evaluate(
    old: Procedure,
    revision: Procedure,
    candidates: Sequence[Procedure],
    similarity: Similarity | None = None,
) -> list[Finding]:
    """The findings alone (pairs left undecided are not findings)."""
    return assess(old, revision, candidates, Signals(similarity=similarity or {})).findings


class _Reading:
    """The two versions read once, and the rules run against one candidate at a time."""

    def __init__(self, old: Procedure, revision: Procedure, signals: Signals) -> None:
        self.old, self.new = Facts.read(old), Facts.read(revision)
        self.signals = signals
        self.added = demands.new_demands(self.old, self.new)
        self.prohibitions = prohibitions.new_prohibitions(self.old, self.new)
        self.restated = demands.restated(old, revision)

    def rules(self, candidate: Procedure) -> tuple[list[Finding], list[Undecided]]:
        findings, question, pair = self._read_pair(candidate)
        if findings:
            return findings, []
        if question is not None:
            return [], [question]
        routed = triage.route(pair, candidate.id, self.signals.ask_share)
        return [], [routed] if routed else []

    def triage_features(self, candidate: Procedure) -> tuple[float, ...] | str:
        """The features triage scores this pair on, or what decided it instead: "finding"
        or "question"; what `benchmarks/procinterfere/train_triage.py` learns from."""
        findings, question, pair = self._read_pair(candidate)
        return "finding" if findings else "question" if question is not None else pair

    def _read_pair(
        self, candidate: Procedure
    ) -> tuple[list[Finding], Undecided | None, tuple[float, ...]]:
        """The rules' findings when one is sure (with the unsure ones beside it); else their
        question, if any; else, for triage, the pair's features."""
        dependent = Facts.read(candidate)
        surface = shared_surface(self.old, self.new, dependent, self.signals.aliases)
        findings = self._findings(dependent, surface)
        if [f for f in findings if not demands.reach_unstated(f)]:
            return findings, None, ()
        question, examined, linked = self._question(dependent, surface, findings)
        if question is not None:
            return [], question, ()
        pair = triage.features(self.old, self.new, dependent, surface, linked, examined)
        return [], None, pair

    def _findings(self, dependent: Facts, surface: Surface) -> list[Finding]:
        """What the rules find, sure or with a reach only inferred."""
        old, new = self.old, self.new
        if surface.shared:
            findings = self._shared(dependent, surface)
        else:  # a credential it writes with, named in three words or more, links them too
            findings = limits.tightened_permissions(old, new, dependent, at_least=3)
            # the dependent names the very resource: a path laid out anew, a deleted name
            findings = findings or layouts.changed_layouts(old, new, dependent)
            findings = findings or layouts.reordered_fields(old, new, dependent)
            # a step of it that acts in the hours the revision no longer keeps open
            findings = findings or hours.narrowed_hours(old, new, dependent)
            findings = findings or deletions.deleted_inputs(old, new, dependent)
            if not findings and knowledge.linked(old, new, dependent, surface):
                # A dependent that runs at a clock time and names what the procedure is
                # about ("pull the release candidate") waits for its output by the clock.
                findings = order.finishes_later(old, new, dependent)
                # One that names the system and says it goes without what it now requires,
                # or needs more than a bound it tightened now allows.
                findings = findings or lacks.lacks_required(old, new, dependent)
                findings = findings or bounds.tightened_bounds(old, new, dependent)
                findings = findings or bounds.lengthened_periods(old, new, dependent)
        if not findings:  # a value the dependent relies on, when no more specific rule spoke
            findings = knowledge.relied_on_values(old, new, dependent, surface)
        if not findings and knowledge.linked(old, new, dependent, surface):
            findings = knowledge.turned_off(old, new, dependent)
        # a value the revision moved across one the dependent states (see `crossings`)
        return findings or crossings.crossed_values(old, new, dependent)

    def _question(
        self, dependent: Facts, surface: Surface, findings: list[Finding]
    ) -> tuple[Undecided | None, tuple[str, ...], bool]:
        """The question the rules raise about a pair they did not decide, the change texts
        they judged, and whether the pair is linked."""
        old, new = self.old, self.new
        examined = tuple(d.text for d in self.added) + tuple(c.text for c, _ in self.prohibitions)
        examined += tuple(self.restated)  # a precondition reworded in place changed nothing
        linked = knowledge.linked(old, new, dependent, surface)
        # unmet demands whose reach is only inferred, when they are worth a question; the
        # others are left to the questions below and to triage
        worth = [
            f
            for f in findings
            if reach.worth_asking(f.evidence["revision"], old.procedure, new.procedure, dependent)
        ]
        if worth:
            return _ask_reach(dependent, worth), examined, linked
        question = knowledge.undecided(old, new, dependent, surface)
        question = question or layouts.undecided(old, new, dependent)
        question = question or deletions.undecided(old, new, dependent)
        if linked:
            question = question or order.moved_onto(old, new, dependent)
        question = question or exposure.undecided(old, new, dependent, examined, linked)
        return question, examined, linked

    def _shared(self, dependent: Facts, surface: Surface) -> list[Finding]:
        old, new, similarity = self.old, self.new, self.signals.similarity
        added = self.added
        if surface.umbrella_only:
            # Disjoint resources under one entity: only a demand on the entity itself, or one
            # whose subject reaches out to others ("every job must..."), reaches it.
            added = [d for d in added if names_entity(d.text, surface.entities) or d.reaches]
        return [
            *demands.unmet_preconditions(added, new, dependent, surface, similarity),
            *prohibitions.violated_prohibitions(self.prohibitions, dependent, surface),
            *outputs.removed_outputs(old, new, dependent),
            *removed.removed_identifiers(old, new, dependent),
            *removed.destructive_options(old, new, dependent),
            *layouts.changed_layouts(old, new, dependent),
            *layouts.reordered_fields(old, new, dependent),
            *deletions.deleted_inputs(old, new, dependent),
            *outputs.changed_formats(old, new, dependent),
            *delimiters.changed_separators(old, new, dependent),
            *outputs.changed_versions(old, new, dependent),
            *outputs.reordered_outputs(old, new, dependent, surface),
            *order.moved_past_signal(old, new, dependent),
            *order.finishes_later(old, new, dependent),
            *limits.tightened_limits(old, new, dependent),
            *bounds.tightened_bounds(old, new, dependent),
            *bounds.lengthened_periods(old, new, dependent),
            *hours.narrowed_hours(old, new, dependent),
            *measures.changed_measures(old, new, dependent),
            *measures.new_measured_limits(old, new, dependent),
            *limits.tightened_permissions(old, new, dependent),
            *grants.narrowed_grants(old, new, dependent),
            *grants.anonymous_callers(old, new, dependent),
            *lacks.lacks_required(old, new, dependent),
        ]


def _ask_reach(dependent: Facts, findings: list[Finding]) -> Undecided:
    """The unmet demands whose reach is only inferred from a shared surface, as a question."""
    said = "; ".join(f.detail for f in findings)
    return Undecided(
        dependent.procedure.id,
        "low_confidence",
        f"{said}; whether the demand binds the dependent is not stated",
        tuple(findings),
    )


def semantic_requests(
    old: Procedure, revision: Procedure, candidates: Sequence[Procedure]
) -> list[tuple[str, str]]:
    """The (demand, dependent step) text pairs whose similarity the caller may compute and
    pass back in `Signals`; only for new demands and candidates sharing a surface."""
    old_facts, new_facts = Facts.read(old), Facts.read(revision)
    added = demands.new_demands(old_facts, new_facts)
    pairs: list[tuple[str, str]] = []
    for candidate in candidates:
        dependent = Facts.read(candidate)
        if added and shared_surface(old_facts, new_facts, dependent).relevant:
            for d in added:
                pairs += demands.semantic_pairs(d, dependent)
    return list(dict.fromkeys(pairs))
