"""What the store hands back: plain typed rows, independent of the wire protocol."""

from __future__ import annotations

from typing import Any

import msgspec

from memproc.lifecycle import HIDDEN, SERVED, STATES
from memproc.store.rows import RowDecoder
from memproc.wire.vocabulary import Kind, Status

# Statuses a search may serve, and statuses hidden from every read: both decided by the state
# machine in `memproc.lifecycle`, spelt here as tuples for SQL's json_each.
SEARCHABLE_STATUSES = tuple(state for state in STATES if state in SERVED)
HIDDEN_STATUSES = tuple(state for state in STATES if state in HIDDEN)


class MemoryRecord(msgspec.Struct, frozen=True, kw_only=True, array_like=True):
    """A row of `memories`: the fields are the columns a read selects, in order."""

    seq: int
    id: str
    scope: str
    kind: Kind
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    source: dict[str, Any]
    importance: float
    status: Status
    created_at: str
    updated_at: str
    occurred_at: str | None = None
    revision: int = 1
    superseded_by: str | None = None
    valid_from: str | None = None  # NULL: from when it was recorded (created_at)
    valid_until: str | None = None  # NULL: open
    thread: str | None = None  # its thread key: neighbours share it (see store/threads.py)


MEMORY_ROW = RowDecoder(MemoryRecord, json=("tags", "metadata", "source"))


class NewMemory(msgspec.Struct, frozen=True, kw_only=True):
    scope: str
    kind: Kind
    content: str
    tags: list[str]
    metadata: dict[str, Any]
    source: dict[str, Any]
    importance: float
    client_token: str | None
    occurred_at: str | None = None
    context: str | None = None
    thread: str | None = None  # the thread key: an explicit thread, else source.session
    refs: list[str] = msgspec.field(default_factory=list)  # `memory:<id>` it cites
    valid_from: str | None = None  # None: from when it is recorded
    valid_until: str | None = None  # None: open


class SearchRow(msgspec.Struct, frozen=True):
    record: MemoryRecord
    bm25: Any  # a float from SQLite's bm25()
