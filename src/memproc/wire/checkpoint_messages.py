"""Params and results of `checkpoint.*`: where a task stands, saved so work can resume later.

Each save makes a new revision; `if_revision` turns a save into compare-and-set so that two
agents on one task cannot silently overwrite each other.
"""

from __future__ import annotations

from typing import Annotated

import msgspec
from msgspec import Meta

from memproc.wire.messages import Cursor, Limit, Params, Result, Scope

Task = Annotated[
    str, Meta(min_length=1, max_length=256, description="A task name, chosen by the client.")
]
Line = Annotated[str, Meta(min_length=1, max_length=4096)]
Lines = Annotated[list[Line], Meta(max_length=100)]
FilePath = Annotated[str, Meta(min_length=1, max_length=1024)]
Revision = Annotated[int, Meta(ge=1, le=2**62)]


class Checkpoint(msgspec.Struct, kw_only=True):
    scope: str
    task: str
    revision: int
    summary: str
    decisions: list[str]
    next_steps: list[str]
    blockers: list[str]
    files: list[str]
    saved_at: str
    current: bool = True


class CheckpointSaveParams(Params, kw_only=True):
    scope: Scope | None = None
    task: Task
    summary: Annotated[
        str, Meta(min_length=1, description="Bounded by the server's `max_content_chars`.")
    ]
    decisions: Lines = msgspec.field(default_factory=list)
    next_steps: Lines = msgspec.field(default_factory=list)
    blockers: Lines = msgspec.field(default_factory=list)
    files: Annotated[list[FilePath], Meta(max_length=200)] = msgspec.field(default_factory=list)
    if_revision: (
        Annotated[
            int,
            Meta(
                ge=0,
                le=2**62,
                description="Save only if the current revision is this one; 0: only if the "
                "task has no checkpoint (never saved, or cleared).",
            ),
        ]
        | None
    ) = None


class CheckpointSaveResult(Result, kw_only=True):
    task: str
    revision: int
    saved_at: str


class CheckpointGetParams(Params, kw_only=True):
    scope: Scope | None = None
    task: Task
    revision: Revision | None = None


class CheckpointGetResult(Result, kw_only=True):
    checkpoint: Checkpoint


class CheckpointListParams(Params, kw_only=True):
    scope: Scope | None = None
    limit: Limit = 50
    cursor: Cursor | None = None


class CheckpointListResult(Result, kw_only=True):
    items: list[Checkpoint]
    next_cursor: str | None = None


class CheckpointClearParams(Params, kw_only=True):
    scope: Scope | None = None
    task: Task


class CheckpointClearResult(Result, kw_only=True):
    task: str
    cleared: bool
    revision: int | None = None
