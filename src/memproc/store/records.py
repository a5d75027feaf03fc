"""What the store hands back: plain typed rows, independent of the wire protocol."""

from __future__ import annotations

from typing import Any

import msgspec

from memproc.lifecycle import HIDDEN, SERVED, STATES

# Statuses a search may serve, and statuses hidden from every read: both decided by the state
# machine in `memproc.lifecycle`, spelt here as tuples for SQL's json_each.
SEARCHABLE_STATUSES = tuple(state for state in STATES if state in SERVED)
HIDDEN_STATUSES = tuple(state for state in STATES if state in HIDDEN)


class MemoryRecord(msgspec.Struct, frozen=True, kw_only=True):
    seq: int
    id: str
    scope: str
    kind: str
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    source: dict[str, Any]
    importance: float
    status: str
    created_at: str
    updated_at: str
    occurred_at: str | None = None
    revision: int = 1
    superseded_by: str | None = None


class NewMemory(msgspec.Struct, frozen=True, kw_only=True):
    scope: str
    kind: str
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    source: dict[str, Any]
    importance: float
    client_token: str | None
    occurred_at: str | None = None
    context: str | None = None
    refs: list[str] = msgspec.field(default_factory=list)  # `memory:<id>` it cites


class SearchRow(msgspec.Struct, frozen=True):
    record: MemoryRecord
    bm25: Any  # a float from SQLite's bm25()
