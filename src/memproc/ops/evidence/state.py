"""The computed side of an evidence record: state, eligible, reason, recomputed on every read.

Rules, most severe first (the order of `EvidenceReason`):
- a record whose hash or lookup columns do not match its payload is `tampered`: never eligible,
  and its references are not followed;
- past `expires_at` it is `expired`, not eligible;
- each reference is checked: a memory forgotten or purged, superseded, invalidated or missing,
  an evidence record that is missing or itself not eligible (or part of a cycle), and, only
  when files are checked, a file outside the project, missing or changed, make the record
  `stale` and not eligible;
- a memory that is challenged, or cited evidence that is stale but eligible, makes the record
  `stale` yet still eligible: the dispute is shown (reason `source_challenged` or
  `source_stale`), the record is not hidden for it;
- otherwise the state is the recorded outcome: supported, contradicted or unknown.
Eligible means available and fresh, never that the claim is true.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import get_args

import apsw

from memproc.errors import InvalidParams
from memproc.ops.evidence.files import check_file
from memproc.ops.evidence.payload import Payload, intact
from memproc.ops.evidence.refs import EvidenceRef, FileRef, MemoryRef, Ref, parse_ref
from memproc.store import evidence as evidence_sql
from memproc.store.evidence import EvidenceRow
from memproc.wire.evidence_messages import EvidenceReason, EvidenceState, RefProblem

SEVERITY: tuple[str, ...] = get_args(EvidenceReason)
# Problems that flag a record without taking its eligibility away.
SOFT_REASONS = frozenset({"source_challenged", "source_stale"})
_MEMORY_STATUS_REASONS: dict[str, EvidenceReason] = {
    "challenged": "source_challenged",
    "superseded": "source_superseded",
    "invalidated": "source_invalidated",
    "forgotten": "source_forgotten",
    "purged": "source_forgotten",
}
# Chains of evidence resting on evidence deeper than this are not followed further.
MAX_CHAIN_DEPTH = 32


@dataclass(frozen=True)
class Verdict:
    state: EvidenceState
    eligible: bool
    reason: EvidenceReason | None = None
    problems: tuple[RefProblem, ...] = ()


@dataclass
class Judge:
    """Judges the records of one read (one snapshot, one `now`), remembering what it has seen:
    a reference shared by many records is looked up once, a file hashed once."""

    conn: apsw.Connection
    scope: str
    now: str
    check_files: bool = False
    _verdicts: dict[str, Verdict] = field(default_factory=dict)
    _files: dict[FileRef, EvidenceReason | None] = field(default_factory=dict)
    _open: set[str] = field(default_factory=set)

    def judge(self, row: EvidenceRow) -> tuple[Payload | None, Verdict]:
        payload = intact(row)
        known = self._verdicts.get(row.evidence_id)
        if known is None:
            known = self._verdict(row.evidence_id, payload)
            self._verdicts[row.evidence_id] = known
        return payload, known

    def _verdict(self, evidence_id: str, payload: Payload | None) -> Verdict:
        refs = None if payload is None else _parsed(payload.source_refs)
        if payload is None or refs is None:
            return Verdict(state="tampered", eligible=False, reason="tampered")
        self._open.add(evidence_id)
        try:
            problems = tuple(self._problems(payload.source_refs, refs))
        finally:
            self._open.discard(evidence_id)
        if payload.expires_at is not None and payload.expires_at <= self.now:
            return Verdict(state="expired", eligible=False, reason="expired", problems=problems)
        if not problems:
            return Verdict(state=payload.outcome, eligible=True)
        reason = min((p.reason for p in problems), key=SEVERITY.index)
        eligible = all(p.reason in SOFT_REASONS for p in problems)
        return Verdict(state="stale", eligible=eligible, reason=reason, problems=problems)

    def _problems(self, texts: list[str], refs: list[Ref]) -> list[RefProblem]:
        found = []
        for text, ref in zip(texts, refs, strict=True):
            reason = self._check(ref)
            if reason is not None:
                found.append(RefProblem(ref=text, reason=reason))
        return found

    def _check(self, ref: Ref) -> EvidenceReason | None:
        if isinstance(ref, MemoryRef):
            status = evidence_sql.memory_status(self.conn, self.scope, ref.id)
            if status is None:
                return "source_missing"
            return (
                None
                if status == "active"
                else _MEMORY_STATUS_REASONS.get(status, "source_ineligible")
            )
        if isinstance(ref, EvidenceRef):
            return self._check_evidence(ref.id)
        if not self.check_files:
            return None
        if ref not in self._files:
            self._files[ref] = check_file(self.scope, ref.path, ref.sha256)
        return self._files[ref]

    def _check_evidence(self, evidence_id: str) -> EvidenceReason | None:
        if evidence_id in self._open or len(self._open) >= MAX_CHAIN_DEPTH:
            return "source_ineligible"  # circular (or unboundedly deep) support is no support
        row = evidence_sql.get(self.conn, self.scope, evidence_id)
        if row is None:
            return "source_missing"
        _, verdict = self.judge(row)
        if not verdict.eligible:
            return "source_ineligible"
        return "source_stale" if verdict.state == "stale" else None


def _parsed(texts: list[str]) -> list[Ref] | None:
    """Stored references were checked when put; one that no longer parses means damage."""
    try:
        return [parse_ref(text, "$") for text in texts]
    except InvalidParams:
        return None
