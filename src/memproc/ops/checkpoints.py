"""`checkpoint.*`: save (optionally conditional), get (any revision), list, clear.

Every save and every clear appends a revision; nothing is overwritten, so history stays
readable after a clear. A task "has a checkpoint" when its newest revision is not a clear; its
current revision is then that number, otherwise 0, which is what `if_revision: 0` expects.
"""

from __future__ import annotations

import apsw

from memproc.errors import Conflict, InvalidParams, NotFound
from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.store import checkpoints as checkpoint_sql
from memproc.store.checkpoints import CLEARED, CheckpointContent, CheckpointRow
from memproc.wire.checkpoint_messages import (
    Checkpoint,
    CheckpointClearParams,
    CheckpointClearResult,
    CheckpointGetParams,
    CheckpointGetResult,
    CheckpointListParams,
    CheckpointListResult,
    CheckpointSaveParams,
    CheckpointSaveResult,
)

CURSOR_TAG = "c1"


def save(ctx: OpContext, params: CheckpointSaveParams) -> CheckpointSaveResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    content = _content(ctx, params)
    with ctx.runtime.store().writing(ctx.token) as conn:
        newest = checkpoint_sql.newest(conn, scope, params.task)
        current = current_revision(newest)
        if params.if_revision is not None and params.if_revision != current:
            raise Conflict(
                "the checkpoint's current revision is not the one given",
                task=params.task,
                current_revision=current,
                if_revision=params.if_revision,
            )
        number = 1 if newest is None else newest.revision + 1
        row = checkpoint_sql.append(conn, scope, params.task, number, content)
    return CheckpointSaveResult(task=row.task, revision=row.revision, saved_at=row.saved_at)


def get(ctx: OpContext, params: CheckpointGetParams) -> CheckpointGetResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        newest = checkpoint_sql.newest(conn, scope, params.task)
        row = newest
        if params.revision is not None and newest is not None:
            row = checkpoint_sql.revision(conn, scope, params.task, params.revision)
    if row is None or row.cleared:
        raise NotFound(
            "no such checkpoint revision" if params.revision else "no checkpoint for this task",
            task=params.task,
            current_revision=current_revision(newest),
        )
    return CheckpointGetResult(
        checkpoint=checkpoint_view(row, current=row.revision == current_revision(newest))
    )


def list_checkpoints(ctx: OpContext, params: CheckpointListParams) -> CheckpointListResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    before = cursors.decode(CURSOR_TAG, params.cursor)
    with ctx.runtime.store().reading(ctx.token) as conn:
        rows = checkpoint_sql.list_current(conn, scope, before_seq=before, limit=params.limit + 1)
    page, more = rows[: params.limit], len(rows) > params.limit
    next_cursor = cursors.encode(CURSOR_TAG, page[-1].seq) if more else None
    return CheckpointListResult(items=[checkpoint_view(r) for r in page], next_cursor=next_cursor)


def clear(ctx: OpContext, params: CheckpointClearParams) -> CheckpointClearResult:
    """Idempotent: clearing a task with no checkpoint changes nothing and says so."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        newest = checkpoint_sql.newest(conn, scope, params.task)
        if newest is None or newest.cleared:
            return CheckpointClearResult(task=params.task, cleared=False)
        row = _append_clear(conn, scope, params.task, newest.revision + 1)
    return CheckpointClearResult(task=params.task, cleared=True, revision=row.revision)


def current_revision(newest: CheckpointRow | None) -> int:
    return 0 if newest is None or newest.cleared else newest.revision


def checkpoint_view(row: CheckpointRow, *, current: bool = True) -> Checkpoint:
    return Checkpoint(
        scope=row.scope,
        task=row.task,
        revision=row.revision,
        summary=row.summary,
        decisions=row.decisions,
        next_steps=row.next_steps,
        blockers=row.blockers,
        files=row.files,
        saved_at=row.saved_at,
        current=current,
    )


def _content(ctx: OpContext, params: CheckpointSaveParams) -> CheckpointContent:
    limit = ctx.runtime.config.max_content_chars
    if len(params.summary) > limit:
        raise InvalidParams(f"summary exceeds {limit} characters", path="$.params.summary")
    for name, text in (("summary", params.summary), ("task", params.task)):
        if not text.strip():
            raise InvalidParams(f"{name} must not be blank", path=f"$.params.{name}")
    return CheckpointContent(
        summary=params.summary,
        decisions=params.decisions,
        next_steps=params.next_steps,
        blockers=params.blockers,
        files=params.files,
    )


def _append_clear(conn: apsw.Connection, scope: str, task: str, number: int) -> CheckpointRow:
    return checkpoint_sql.append(conn, scope, task, number, CLEARED, cleared=True)
