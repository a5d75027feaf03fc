"""`memory.edit` and `memory.history`: new revisions of a memory's content, and its past.

An edit never overwrites: the new content becomes a new revision row and the current content
in `memories` (which FTS5 follows by trigger). Its vectors are recomputed before the write
when an embedder is ready; otherwise the old ones are stale by content hash and the backfill
replaces them.
"""

from __future__ import annotations

from memproc.lifecycle import next_state
from memproc.ops.context import OpContext
from memproc.ops.memories import citing, embedding, threads
from memproc.ops.memories.lifecycle import find, find_visible
from memproc.ops.memories.views import change_view, revision_view, source_dict
from memproc.ops.validation import check_content, check_window, normalize_time
from memproc.store import MemoryRecord, citations, events, revisions
from memproc.store import memories as memory_sql
from memproc.store import threads as thread_sql
from memproc.store.annotations import memory_ref
from memproc.wire.messages import EditParams, EditResult, HistoryParams, HistoryResult


def edit(ctx: OpContext, params: EditParams) -> EditResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    check_content(params.content, ctx.runtime.config.max_content_chars)
    store = ctx.runtime.store()
    thread_window = threads.window(ctx)
    with store.reading(ctx.token) as conn:
        before = find(conn, scope, params.id)
        text = (params.content, memory_sql.context_of(conn, before.seq))
    # A turn of a thread is embedded after the commit, with its window, as are the
    # neighbours whose windows hold its text.
    windowed = before.thread is not None and not thread_window.empty
    index = None if before.content == params.content else embedding.ready_index(ctx)
    vectors = {} if index is None or windowed else embedding.embed(index, [text])
    ctx.token.check()
    with store.writing(ctx.token) as conn:
        record = find(conn, scope, params.id)
        next_state("edit", record.status)
        ref = memory_ref(record.id)
        if params.refs is not None:
            citing.check_refs(conn, scope, params.refs, "$.params.refs", citing_id=record.id)
        same_refs = params.refs is None or set(params.refs) == set(
            citations.cited_by(conn, scope, ref)
        )
        window = _window(record, params)
        same_window = window == (record.valid_from, record.valid_until)
        if not same_window:
            memory_sql.set_window(conn, record.seq, *window)
        if record.content == params.content and same_refs:
            return EditResult(id=record.id, revision=record.revision, changed=not same_window)
        revision = record.revision + 1
        digest = memory_sql.content_hash(params.content)
        source = source_dict(params.source)
        revisions.add(
            conn, record.seq, revision, params.content, digest, reason=params.reason, source=source
        )
        memory_sql.replace_content(conn, record.seq, params.content, revision)
        if params.refs is not None:
            citing.replace_refs(conn, scope, record.id, params.refs)
        rewindowed = []
        if text[0] != record.content and record.thread is not None:
            rewindowed = thread_sql.refresh(conn, [record.seq], thread_window)
        if index is not None and text in vectors and text[0] != record.content:
            embedding.store_vectors(
                conn,
                index,
                seq=record.seq,
                scope=scope,
                kind=record.kind,
                text=text,
                vectors=vectors[text],
                replace=True,
            )
    if text[0] != record.content and not windowed:
        embedding.wrote(ctx, index)
    own = [record.seq] if windowed and text[0] != record.content else []
    threads.embed_rewindowed(ctx, index, sorted({*rewindowed, *own}))
    return EditResult(id=record.id, revision=revision, changed=True)


def _window(record: MemoryRecord, params: EditParams) -> tuple[str | None, str | None]:
    """The memory's window after the edit: each end given replaces the current one."""
    valid_from = normalize_time(params.valid_from, "$.params.valid_from") or record.valid_from
    valid_until = normalize_time(params.valid_until, "$.params.valid_until")
    valid_until = valid_until or record.valid_until
    check_window(valid_from or record.created_at, valid_until, "$.params")
    return valid_from, valid_until


def history(ctx: OpContext, params: HistoryParams) -> HistoryResult:
    """Every revision, oldest first, and every state change with time, reason and source."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        record = find_visible(conn, scope, params.id)
        revision_rows = revisions.list_all(conn, record.seq)
        event_rows = events.list_all(conn, record.seq)
    return HistoryResult(
        id=record.id,
        status=record.status,
        revisions=[revision_view(row) for row in revision_rows],
        changes=[change_view(row) for row in event_rows],
    )
