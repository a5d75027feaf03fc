"""The gate's inputs and outputs: plain frozen data, independent of the store and the wire."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

# Every pattern a finding may carry; the reviewer reads `detail`, the benchmark counts these.
PATTERNS = (
    "unmet_precondition",
    "removed_output",
    "renamed_output",
    "changed_format",
    "changed_version",
    "changed_location",
    "changed_value",
    "later_output",
    "tightened_limit",
    "reordered_output",
    "new_prohibition",
    "undecided",
    "judge_breaks",
    "gate_error",
)

Binds = Literal["self", "consumers", "scope"]
# Why a pair is left to a judge: the rules disagree, their evidence is weak, or only domain
# knowledge (which no rule has) links the change to the dependent.
UndecidedWhy = Literal["rules_disagree", "low_confidence", "world_knowledge"]


@dataclass(frozen=True)
class Step:
    action: str
    detail: str = ""

    @property
    def text(self) -> str:
        """Action and detail as one text, as the rules read a step: "Upload | s3://..."."""
        return f"{self.action} | {self.detail}"


@dataclass(frozen=True)
class Produced:
    """A declared output: what consumers name by `id`."""

    id: str
    format: str | None = None
    version: str | None = None
    location: str | None = None
    available_after: str | None = None  # "02:30" (time of day) or "45m" (after the start)


@dataclass(frozen=True)
class Consumed:
    """A declared input: an output `id`, of the procedure named `source` when given."""

    id: str
    source: str | None = None
    format: str | None = None
    version: str | None = None  # a constraint: ">=2,<3", ">=1.4", "5"


@dataclass(frozen=True)
class Procedure:
    """One version of a procedure as the gate sees it.

    `conditions` are structured preconditions (key, value); `outputs` the text of each output
    (a structured output is flattened to text by the caller, and also given as `produces`);
    `references` the ids of the procedures this one explicitly rests on; `binds` who each
    precondition binds, by its text, where the author declared it.
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
    produces: tuple[Produced, ...] = ()
    consumes: tuple[Consumed, ...] = ()
    binds: tuple[tuple[str, Binds], ...] = ()

    def declared_binds(self, text: str) -> Binds | None:
        return next((b for t, b in self.binds if t == text), None)


@dataclass(frozen=True)
class Finding:
    """Why `dependent_id` may break: the pattern, one sentence, and the texts it rests on."""

    dependent_id: str
    pattern: str
    detail: str
    evidence: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Undecided:
    """A dependent the rules cannot decide on: why, in one sentence, and what they suspected."""

    dependent_id: str
    why: UndecidedWhy
    detail: str
    findings: tuple[Finding, ...] = ()


@dataclass(frozen=True)
class Assessment:
    """The gate's answer: findings it is sure of, and pairs it leaves to a judge or policy."""

    findings: list[Finding] = field(default_factory=list)
    undecided: list[Undecided] = field(default_factory=list)


# The share of pairs the judge may be asked about when the caller does not say: see `triage`.
# Chosen by `train_triage.py`'s sweep, each blind set left out in turn: the share that keeps
# the silent rate under 25% and the ask rate under 30% with the widest margin (at 2026-12-03,
# with all fifteen blind sets whole: 24.7% silent and 29.5% asked over 1,013 breaking and
# 2,032 cases, the only share under both; 0.28 gave 25.7%, 28.4% and 0.30 24.0%, 30.5%). These are
# in-sample for the rules, which were written with most of those sets in view: fresh authors'
# unread halves asked from 29% to 51% (benchmarks/RESULTS.md).
DEFAULT_ASK_SHARE = 0.29

# The optional semantic signal: (demand text, dependent clause text) -> cosine similarity,
# computed by the caller for the pairs `semantic_requests` lists.
Similarity = Mapping[tuple[str, str], float]


@dataclass(frozen=True)
class Signals:
    """What the caller knows besides the procedures: the semantic signal, and the scope's
    entity aliases (normalized name -> other names) added with `entity.alias`."""

    similarity: Similarity = field(default_factory=dict)
    aliases: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # Which share of pairs the judge may be asked about (`triage`): the rules' questions and
    # the pairs triage scores highest together.
    ask_share: float = DEFAULT_ASK_SHARE
