"""Stored procedure versions and gate findings -> wire types."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from memproc import gate
from memproc.store.procedures import VersionRecord
from memproc.wire.procedure_messages import Finding, ProcedureView


def version_view(record: VersionRecord) -> ProcedureView:
    body: dict[str, Any] = record.body
    return msgspec.convert(
        {
            "id": record.procedure_id,
            "scope": record.scope,
            "name": record.name,
            "version": record.version,
            "version_id": record.id,
            "status": record.status,
            "steps": body.get("steps", []),
            "preconditions": body.get("preconditions", []),
            "outputs": body.get("outputs", []),
            "entity_names": body.get("entity_names", []),
            "aliases": body.get("aliases", []),
            "trigger": body.get("trigger"),
            "references": body.get("references", []),
            "success_count": record.success_count,
            "failure_count": record.failure_count,
            "parent_version_id": record.parent_id,
            "created_at": record.created_at,
            "reason": record.reason,
            "findings": record.findings,
            "refs": record.body.get("refs", []),
            "produces": body.get("produces", []),
            "consumes": body.get("consumes", []),
        },
        ProcedureView,
    )


def finding_views(findings: Sequence[gate.Finding]) -> list[Finding]:
    return [
        Finding(
            dependent_id=f.dependent_id,
            pattern=f.pattern,
            detail=f.detail,
            evidence=dict(f.evidence),
        )
        for f in findings
    ]
