"""Helpers shared by the evidence, checkpoint and context tests: build params with defaults."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from memproc.clock import format_ms, now_ms
from memproc.ops.context import OpContext
from memproc.ops.evidence import evidence as evidence_ops
from memproc.ops.memories import memory as memory_ops
from memproc.store import memories as memory_sql
from memproc.wire.evidence_messages import (
    Evidence,
    EvidenceGetParams,
    EvidencePutParams,
    Provenance,
)
from memproc.wire.messages import RememberParams

HOUR_MS = 3600 * 1000
DAY_MS = 24 * HOUR_MS


def ago(ms: int) -> str:
    """A timestamp `ms` milliseconds before now (negative: in the future)."""
    return format_ms(now_ms() - ms)


def put_params(evidence_id: str = "e1", *, scope: str = "s", **extra: Any) -> EvidencePutParams:
    fields: dict[str, Any] = {
        "scope": scope,
        "evidence_id": evidence_id,
        "claim": "the test suite passes on main",
        "outcome": "supported",
        "observation": {"passed": 412, "failed": 0},
        "provenance": Provenance(producer="ci", check_type="pytest", session="run-1"),
        "observed_at": ago(HOUR_MS),
    }
    fields.update(extra)
    return EvidencePutParams(**fields)


def put(ctx: OpContext, evidence_id: str = "e1", **extra: Any) -> Evidence:
    return evidence_ops.put(ctx, put_params(evidence_id, **extra)).evidence


def get(ctx: OpContext, evidence_id: str = "e1", scope: str = "s", **extra: Any) -> Evidence:
    params = EvidenceGetParams(scope=scope, evidence_id=evidence_id, **extra)
    return evidence_ops.get(ctx, params).evidence


def remember(ctx: OpContext, content: str, *, scope: str = "s", kind: str = "fact") -> str:
    params = RememberParams(scope=scope, kind=kind, content=content)
    return memory_ops.remember(ctx, params).id


def set_status(ctx: OpContext, memory_id: str, status: str, scope: str = "s") -> None:
    """Stand-in for the lifecycle methods (another branch): the status column they write."""
    with ctx.runtime.store().writing() as conn:
        record = memory_sql.get(conn, scope, memory_id)
        assert record is not None
        memory_sql.set_status(conn, record.seq, status, "test")


def file_ref(path: Path, relative: str) -> str:
    return f"file:{relative}#sha256={hashlib.sha256(path.read_bytes()).hexdigest()}"


def file_bytes(db: str) -> dict[str, bytes | None]:
    """The database and its WAL, byte for byte (None for a file that does not exist)."""
    out: dict[str, bytes | None] = {}
    for suffix in ("", "-wal"):
        path = Path(db + suffix)
        out[suffix or "db"] = path.read_bytes() if path.exists() else None
    return out
