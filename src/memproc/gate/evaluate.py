"""The gate itself: read the two versions once, then run every detector on each candidate.

Detectors only run on candidates that share a relevant surface with the revision; each one
returns findings that explain themselves. The order of findings is stable (candidates in the
order given, detectors in a fixed order), so the same input always gives the same output.
"""

from __future__ import annotations

from collections.abc import Sequence

from memproc.gate import demands, limits, outputs
from memproc.gate.facts import Facts
from memproc.gate.model import Finding, Procedure, Similarity
from memproc.gate.surface import names_entity, shared_surface


def evaluate(
    old: Procedure,
    revision: Procedure,
    candidates: Sequence[Procedure],
    similarity: Similarity | None = None,
) -> list[Finding]:
    """Findings against each candidate dependent the revision may break."""
    old_facts, new_facts = Facts.read(old), Facts.read(revision)
    added = demands.new_demands(old_facts, new_facts)
    prohibitions = demands.new_prohibitions(old_facts, new_facts)
    findings: list[Finding] = []
    for candidate in candidates:
        if candidate.id in (old.id, revision.id):
            continue
        dependent = Facts.read(candidate)
        surface = shared_surface(old_facts, new_facts, dependent)
        if not surface.shared:
            continue
        if surface.umbrella_only:
            # Disjoint resources under one entity: only a demand on the entity itself
            # ("authenticate to Vault first") reaches the dependent.
            on_entity = [d for d in added if names_entity(d.text, surface.entities)]
            findings += demands.unmet_preconditions(on_entity, dependent, surface, similarity or {})
            continue
        findings += demands.unmet_preconditions(added, dependent, surface, similarity or {})
        findings += demands.violated_prohibitions(prohibitions, dependent, surface)
        findings += outputs.removed_outputs(old_facts, new_facts, dependent)
        findings += outputs.changed_formats(old_facts, new_facts, dependent)
        findings += outputs.changed_versions(old_facts, new_facts, dependent)
        findings += outputs.reordered_outputs(old_facts, new_facts, dependent, surface)
        findings += limits.tightened_limits(old_facts, new_facts, dependent)
        findings += limits.tightened_permissions(old_facts, new_facts, dependent)
    return findings


def semantic_requests(
    old: Procedure, revision: Procedure, candidates: Sequence[Procedure]
) -> list[tuple[str, str]]:
    """The (demand, dependent step) text pairs whose similarity the caller may compute and
    pass back to `evaluate`; only for new demands and candidates sharing a surface."""
    old_facts, new_facts = Facts.read(old), Facts.read(revision)
    added = demands.new_demands(old_facts, new_facts)
    pairs: list[tuple[str, str]] = []
    for candidate in candidates:
        dependent = Facts.read(candidate)
        if added and shared_surface(old_facts, new_facts, dependent).relevant:
            for d in added:
                pairs += demands.semantic_pairs(d, dependent)
    return list(dict.fromkeys(pairs))
