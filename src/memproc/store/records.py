"""What the store hands back: plain typed rows, independent of the wire protocol."""

from __future__ import annotations

from typing import Any

import msgspec

# Statuses a search may serve. Later lifecycle states slot in here, in one place.
SEARCHABLE_STATUSES = ("active", "challenged")


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


class SearchRow(msgspec.Struct, frozen=True):
    record: MemoryRecord
    bm25: Any  # a float from SQLite's bm25()
