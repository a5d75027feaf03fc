"""Params and results of `evidence.*`: immutable observations about claims, with a computed state.

A record is stored as given; its `state`, `eligible` and `reason` are computed on every read from
its expiry, its hash and the records it rests on, so they change while the record does not.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from memproc.wire.messages import Cursor, Limit, Params, Result, Scope, ShortText, Timestamp

EvidenceId = Annotated[
    str,
    Meta(
        pattern=r"^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$",
        description="Chosen by the producer: letters, digits and . _ : - (up to 128).",
    ),
]
Claim = Annotated[str, Meta(min_length=1, max_length=2048)]
Outcome = Literal["supported", "contradicted", "unknown"]
EvidenceState = Literal["supported", "contradicted", "unknown", "stale", "expired", "tampered"]
EvidenceReason = Literal[
    "tampered",
    "expired",
    "source_forgotten",
    "source_superseded",
    "source_invalidated",
    "source_missing",
    "source_ineligible",
    "file_outside_project",
    "file_missing",
    "file_changed",
    "source_challenged",
    "source_stale",
]
SourceRef = Annotated[
    str,
    Meta(
        min_length=1,
        max_length=1024,
        description="memory:<id>, evidence:<id> or file:<relative path>#sha256=<64 hex digits>",
    ),
]
Label = Annotated[str, Meta(min_length=1, max_length=512)]

ELIGIBILITY_NOTE = (
    "eligible means available and fresh (not expired, intact, its sources still standing), "
    "not true: memproc never executes or fetches a reference and does not judge claims"
)


class Provenance(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Who produced the observation and how, as the producer reports it."""

    producer: Label
    check_type: Label
    session: ShortText | None = None
    tool: ShortText | None = None


class RefProblem(msgspec.Struct, kw_only=True):
    ref: str
    reason: EvidenceReason


class Evidence(msgspec.Struct, kw_only=True):
    evidence_id: str
    scope: str
    claim: str
    outcome: Outcome
    observation: dict[str, Any]
    provenance: Provenance
    observed_at: str
    expires_at: str | None
    source_refs: list[str]
    sha256: str
    recorded_at: str
    state: EvidenceState
    eligible: bool
    reason: EvidenceReason | None = None
    problems: list[RefProblem] = []
    files_checked: bool = False
    note: str = ELIGIBILITY_NOTE


class EvidencePutParams(Params, kw_only=True):
    scope: Scope | None = None
    evidence_id: EvidenceId
    claim: Claim
    outcome: Outcome
    observation: Annotated[
        dict[str, Any], Meta(description="Bounded by `max_observation_bytes` as JSON.")
    ]
    provenance: Provenance
    observed_at: Timestamp
    expires_at: Timestamp | None = None
    source_refs: Annotated[list[SourceRef], Meta(max_length=64)] = msgspec.field(
        default_factory=list
    )


class EvidencePutResult(Result, kw_only=True):
    evidence: Evidence
    created: bool


class EvidenceGetParams(Params, kw_only=True):
    scope: Scope | None = None
    evidence_id: EvidenceId
    check_files: bool = False


class EvidenceGetResult(Result, kw_only=True):
    evidence: Evidence


class EvidenceListParams(Params, kw_only=True):
    scope: Scope | None = None
    claim: Claim | None = None
    session: ShortText | None = None
    limit: Limit = 50
    cursor: Cursor | None = None
    check_files: bool = False


class EvidenceListResult(Result, kw_only=True):
    items: list[Evidence]
    next_cursor: str | None = None
    note: str = ELIGIBILITY_NOTE
