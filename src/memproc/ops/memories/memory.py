"""`memory.*` writes and reads: remember (one or a batch), get, list, feedback.

The lifecycle (edit, history, challenge, resolve, supersede, invalidate, forget, purge) lives
in `lifecycle.py` and `revisions.py` beside it; citations between memories in `citing.py`.
"""

from __future__ import annotations

from memproc.ops import cursors
from memproc.ops.context import OpContext
from memproc.ops.memories import citing, creation, lifecycle
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.wire.messages import (
    FeedbackParams,
    FeedbackResult,
    ForgetParams,
    ForgetResult,
    GetParams,
    GetResult,
    ListParams,
    ListResult,
    RememberBatchParams,
    RememberBatchResult,
    RememberParams,
    RememberResult,
)

CURSOR_TAG = "m1"


def remember(ctx: OpContext, params: RememberParams) -> RememberResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    new = creation.new_memory(ctx, scope, params, "$.params")
    defer = ctx.runtime.config.defer_embedding
    return creation.remember_all(ctx, [(new, "$.params")], defer_vectors=defer)[0]


def remember_batch(ctx: OpContext, params: RememberBatchParams) -> RememberBatchResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    paths = [f"$.params.items[{i}]" for i in range(len(params.items))]
    news = [
        (creation.new_memory(ctx, scope, item, path), path)
        for item, path in zip(params.items, paths, strict=True)
    ]
    return RememberBatchResult(results=creation.remember_all(ctx, news))


def get(ctx: OpContext, params: GetParams) -> GetResult:
    """Any state but the hidden ones, with its state, successor, challenge and refs."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        record = lifecycle.find_visible(conn, scope, params.id)
        (view,) = citing.views(conn, [record])
    return GetResult(memory=view)


def list_memories(ctx: OpContext, params: ListParams) -> ListResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    before = cursors.decode(CURSOR_TAG, params.cursor)
    with ctx.runtime.store().reading(ctx.token) as conn:
        records = memory_sql.list_page(
            conn, scope, kinds=params.kinds, before_seq=before, limit=params.limit + 1
        )
        page, more = records[: params.limit], len(records) > params.limit
        items = citing.views(conn, page)
    next_cursor = cursors.encode(CURSOR_TAG, page[-1].seq) if more else None
    return ListResult(items=items, next_cursor=next_cursor)


def forget(ctx: OpContext, params: ForgetParams) -> ForgetResult:
    """Hide a memory everywhere; a state change like the others, so it lives in lifecycle.py."""
    return lifecycle.forget(ctx, params)


def feedback(ctx: OpContext, params: FeedbackParams) -> FeedbackResult:
    """Record that a retrieved memory was (or was not) used; the access boost may read it."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        record = lifecycle.find_visible(conn, scope, params.id)
        vector_sql.record_access(conn, [record.seq], "feedback", params.used)
    return FeedbackResult(recorded=True)
