"""The gate's inputs and outputs: plain frozen data, independent of the store and the wire."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

# Every pattern a finding may carry; the reviewer reads `detail`, the benchmark counts these.
PATTERNS = (
    "unmet_precondition",
    "removed_output",
    "renamed_output",
    "changed_format",
    "changed_version",
    "tightened_limit",
    "reordered_output",
    "new_prohibition",
    "gate_error",
)


@dataclass(frozen=True)
class Step:
    action: str
    detail: str = ""


@dataclass(frozen=True)
class Procedure:
    """One version of a procedure as the gate sees it.

    `conditions` are structured preconditions (key, value); `outputs` the text of each output
    (a structured output is flattened to text by the caller); `references` the ids of the
    procedures this one explicitly rests on.
    """

    id: str
    name: str
    steps: tuple[Step, ...] = ()
    preconditions: tuple[str, ...] = ()
    conditions: tuple[tuple[str, str], ...] = ()
    outputs: tuple[str, ...] = ()
    entity_names: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    trigger: str = ""
    references: tuple[str, ...] = ()


@dataclass(frozen=True)
class Finding:
    """Why `dependent_id` may break: the pattern, one sentence, and the texts it rests on."""

    dependent_id: str
    pattern: str
    detail: str
    evidence: Mapping[str, str] = field(default_factory=dict)


# The optional semantic signal: (demand text, dependent clause text) -> cosine similarity,
# computed by the caller for the pairs `semantic_requests` lists.
Similarity = Mapping[tuple[str, str], float]
