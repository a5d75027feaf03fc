"""Store records -> wire types (the store knows nothing of the wire)."""

from __future__ import annotations

from typing import Any

import msgspec

from memproc.store import MemoryRecord
from memproc.store.annotations import Annotation
from memproc.store.events import EventRow
from memproc.store.revisions import RevisionRow
from memproc.wire.messages import (
    Challenge,
    InactiveRef,
    Memory,
    Revision,
    SearchHit,
    Source,
    StageRanks,
    StateChange,
)
from memproc.wire.vocabulary import Status

_NO_ANNOTATION = Annotation()


def source_dict(source: Source | None) -> dict[str, str]:
    if source is None:
        return {}
    return {k: v for k, v in msgspec.structs.asdict(source).items() if v is not None}


def memory_view(record: MemoryRecord, annotation: Annotation | None = None) -> Memory:
    annotation = annotation or _NO_ANNOTATION
    return Memory(
        id=record.id,
        scope=record.scope,
        kind=record.kind,
        content=record.content,
        tags=record.tags,
        metadata=record.metadata,
        source=Source(**record.source),
        importance=record.importance,
        status=record.status,
        created_at=record.created_at,
        updated_at=record.updated_at,
        occurred_at=record.occurred_at,
        revision=record.revision,
        successor=record.superseded_by if record.status == "superseded" else None,
        challenge=_challenge(record, annotation),
        refs=list(annotation.refs),
        rests_on_inactive=_inactive(annotation),
        valid_from=record.valid_from or record.created_at,
        valid_until=record.valid_until,
    )


def hit_view(
    record: MemoryRecord,
    *,
    score: float,
    ranks: StageRanks,
    annotation: Annotation | None = None,
    status: Status | None = None,
) -> SearchHit:
    """`status`: the memory's state at the search's `as_of` when it was given (a memory
    superseded since was then still active), else its status now."""
    annotation = annotation or _NO_ANNOTATION
    status = status or record.status
    return SearchHit(
        id=record.id,
        scope=record.scope,
        kind=record.kind,
        content=record.content,
        score=score,
        status=status,
        created_at=record.created_at,
        tags=record.tags,
        source=Source(**record.source),
        ranks=ranks,
        challenge=_challenge(record, annotation) if status == "challenged" else None,
        rests_on_inactive=_inactive(annotation),
        valid_from=record.valid_from or record.created_at,
        valid_until=record.valid_until,
        successor=record.superseded_by if status == "superseded" else None,
    )


def _challenge(record: MemoryRecord, annotation: Annotation) -> Challenge | None:
    event = annotation.challenge
    if record.status != "challenged" or event is None:
        return None
    return Challenge(reason=event.reason, at=event.at, source=_source(event.source))


def _inactive(annotation: Annotation) -> list[InactiveRef]:
    return [InactiveRef(ref=ref, state=state) for ref, state in annotation.rests_on_inactive]


def _source(stored: dict[str, Any]) -> Source:
    return Source(**stored)


def revision_view(row: RevisionRow) -> Revision:
    return Revision(
        revision=row.revision,
        content=row.content,
        created_at=row.created_at,
        reason=row.reason,
        source=_source(row.source),
    )


def change_view(row: EventRow) -> StateChange:
    return StateChange(
        at=row.at,
        action=row.action,
        previous=row.from_status,
        status=row.to_status,
        reason=row.reason,
        source=_source(row.source),
        successor=row.related,
    )
