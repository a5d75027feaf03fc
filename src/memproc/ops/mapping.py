"""Store records -> protocol types (the store knows nothing of the protocol)."""

from __future__ import annotations

import msgspec

from memproc.protocol.messages import Memory, SearchHit, Source, StageRanks
from memproc.store import MemoryRecord


def source_dict(source: Source | None) -> dict[str, str]:
    if source is None:
        return {}
    return {k: v for k, v in msgspec.structs.asdict(source).items() if v is not None}


def memory_view(record: MemoryRecord) -> Memory:
    return Memory(
        id=record.id,
        scope=record.scope,
        kind=record.kind,  # type: ignore[arg-type]
        content=record.content,
        tags=record.tags,
        metadata=record.metadata,
        source=Source(**record.source),
        importance=record.importance,
        status=record.status,  # type: ignore[arg-type]
        created_at=record.created_at,
        updated_at=record.updated_at,
        occurred_at=record.occurred_at,
    )


def hit_view(record: MemoryRecord, *, score: float, ranks: StageRanks) -> SearchHit:
    return SearchHit(
        id=record.id,
        scope=record.scope,
        kind=record.kind,  # type: ignore[arg-type]
        content=record.content,
        score=score,
        status=record.status,  # type: ignore[arg-type]
        created_at=record.created_at,
        tags=record.tags,
        source=Source(**record.source),
        ranks=ranks,
    )
