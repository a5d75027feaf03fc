"""Helpers for the gate's rule tests: a procedure from (action, detail) pairs, and the verdict
the gate gives on one revision against one dependent."""

from __future__ import annotations

from memproc.gate import Procedure, Step, assess, index_keys, probe_keys


def proc(pid: str, name: str, entities: list[str], steps: list[tuple[str, str]]) -> Procedure:
    return Procedure(
        id=pid, name=name, steps=tuple(Step(*s) for s in steps), entity_names=tuple(entities)
    )


def verdict(old: Procedure, new: Procedure, dependent: Procedure) -> list[str]:
    """Patterns of the findings, or "undecided:<why>" for a pair left to a judge; only for a
    dependent the index would offer as a candidate."""
    if not index_keys(dependent) & probe_keys(old, new):
        return []
    result = assess(old, new, [dependent])
    return [f.pattern for f in result.findings] + [f"undecided:{u.why}" for u in result.undecided]
