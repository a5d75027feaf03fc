"""Helpers for the gate's rule tests: a procedure from (action, detail) pairs, and the verdict
the gate gives on one revision against one dependent."""

from __future__ import annotations

from typing import Any

from memproc.gate import Procedure, Step, assess, index_keys, probe_keys


def proc(pid: str, name: str, entities: list[str], steps: list[Any], **extra: Any) -> Procedure:
    """steps: "action" or ("action", "detail"); list fields in `extra` become tuples."""
    built = tuple(Step(*s) if isinstance(s, tuple) else Step(s) for s in steps)
    for key in ("preconditions", "outputs", "aliases", "references"):
        if key in extra:
            extra[key] = tuple(extra[key])
    return Procedure(id=pid, name=name, steps=built, entity_names=tuple(entities), **extra)


def verdict(old: Procedure, new: Procedure, dependent: Procedure) -> list[str]:
    """Patterns of the findings, or "undecided:<why>" for a pair left to a judge; only for a
    dependent the index would offer as a candidate."""
    if not index_keys(dependent) & probe_keys(old, new):
        return []
    result = assess(old, new, [dependent])
    return [f.pattern for f in result.findings] + [f"undecided:{u.why}" for u in result.undecided]
