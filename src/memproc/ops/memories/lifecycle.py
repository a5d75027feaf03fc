"""`memory.*` state changes: challenge, resolve, supersede, invalidate, forget, purge.

Every one goes through `_move`, which asks the state machine (`memproc.lifecycle`) before it
writes, logs the change with its time, reason and source, and collects the impact: the records
citing the memory, which now rest on something no longer active. One transaction each.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import apsw

from memproc.clock import now_rfc3339
from memproc.errors import Conflict, InvalidParams, NotFound
from memproc.lifecycle import (
    HIDDEN,
    IDEMPOTENT,
    SERVED,
    Action,
    State,
    impacts_citers,
    is_repeat,
    next_state,
)
from memproc.ops.context import OpContext
from memproc.ops.memories import citing, creation, embedding, threads
from memproc.ops.memories.views import source_dict
from memproc.ops.validation import check_content, normalize_time
from memproc.store import MemoryRecord, NewMemory, erasure, events
from memproc.store import memories as memory_sql
from memproc.store import threads as thread_sql
from memproc.wire.messages import (
    ChallengeParams,
    ForgetParams,
    ForgetResult,
    Impact,
    InvalidateParams,
    PurgeParams,
    PurgeResult,
    ResolveParams,
    Source,
    SupersedeParams,
    TransitionResult,
)


@dataclass(frozen=True)
class Moved:
    record: MemoryRecord  # as it was before the move
    status: State
    changed: bool
    impact: list[Impact]
    rewindowed: list[int] = field(default_factory=list)  # thread entries the move changed


def find(conn: apsw.Connection, scope: str, memory_id: str) -> MemoryRecord:
    record = memory_sql.get(conn, scope, memory_id)
    if record is None:
        raise NotFound("memory not found", id=memory_id)
    return record


def find_visible(conn: apsw.Connection, scope: str, memory_id: str) -> MemoryRecord:
    """Like `find`, but a forgotten or purged memory is as good as absent to readers."""
    record = find(conn, scope, memory_id)
    if record.status in HIDDEN:
        raise NotFound("memory not found", id=memory_id)
    return record


def _move(
    conn: apsw.Connection,
    record: MemoryRecord,
    action: Action,
    *,
    reason: str | None,
    source: Source | None,
    window: thread_sql.Window,
    successor: str | None = None,
) -> Moved:
    if is_repeat(action, record.status):
        return Moved(record, IDEMPOTENT[action], False, [])
    after = next_state(action, record.status)
    memory_sql.set_status(conn, record.seq, after, reason)
    events.record(
        conn,
        record.seq,
        action,
        record.status,
        after,
        reason=reason,
        source=source_dict(source),
        related=successor,
    )
    impact = []
    if impacts_citers(record.status, after):
        impact = citing.impact(conn, record.scope, record.id, after, successor)
    rewindowed = []
    if (record.status in SERVED) != (after in SERVED):  # it joins or leaves its neighbours
        rewindowed = thread_sql.refresh(conn, [record.seq], window)
    return Moved(record, after, True, impact, rewindowed)


def _simple(
    ctx: OpContext, raw_scope: str | None, memory_id: str, action: Action, **log: Any
) -> Moved:
    scope = ctx.runtime.scopes.resolve(raw_scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        record = find(conn, scope, memory_id)
        moved = _move(conn, record, action, window=threads.window(ctx), **log)
    threads.embed_rewindowed(ctx, embedding.ready_index(ctx), moved.rewindowed)
    return moved


def _result(moved: Moved) -> TransitionResult:
    return TransitionResult(
        id=moved.record.id,
        status=moved.status,
        changed=moved.changed,
        impact=moved.impact,
    )


def challenge(ctx: OpContext, params: ChallengeParams) -> TransitionResult:
    """Flag a memory as doubted; it stays searchable, carrying the challenge."""
    moved = _simple(
        ctx, params.scope, params.id, "challenge", reason=params.reason, source=params.source
    )
    return _result(moved)


def resolve(ctx: OpContext, params: ResolveParams) -> TransitionResult:
    action: Action = "uphold" if params.outcome == "upheld" else "reject"
    moved = _simple(
        ctx, params.scope, params.id, action, reason=params.reason, source=params.source
    )
    return _result(moved)


def invalidate(ctx: OpContext, params: InvalidateParams) -> TransitionResult:
    moved = _simple(
        ctx, params.scope, params.id, "invalidate", reason=params.reason, source=params.source
    )
    return _result(moved)


def forget(ctx: OpContext, params: ForgetParams) -> ForgetResult:
    """Hide a memory everywhere (a repeat is `changed: false`); its content is kept."""
    moved = _simple(
        ctx, params.scope, params.id, "forget", reason=params.reason, source=params.source
    )
    return ForgetResult(
        id=params.id, status="forgotten", changed=moved.changed, impact=moved.impact
    )


def purge(ctx: OpContext, params: PurgeParams) -> PurgeResult:
    """Erase a memory's content for good, leaving a tombstone; then truncate the WAL."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    store = ctx.runtime.store()
    with store.writing(ctx.token) as conn:
        record = find(conn, scope, params.id)
        if is_repeat("purge", record.status):
            return PurgeResult(id=params.id, status="purged", changed=False)
        next_state("purge", record.status)  # the table decides, even though all states may go
        now = now_rfc3339()
        impact = citing.impact(conn, scope, record.id, "purged")
        rewindowed = erasure.erase(conn, record, now, threads.window(ctx))
        events.record(
            conn,
            record.seq,
            "purge",
            record.status,
            "purged",
            reason=params.reason,
            source=source_dict(params.source),
            at=now,
        )
    checkpointed = store.checkpoint()
    threads.embed_rewindowed(ctx, embedding.ready_index(ctx), rewindowed)
    return PurgeResult(id=params.id, status="purged", impact=impact, checkpointed=checkpointed)


def supersede(ctx: OpContext, params: SupersedeParams) -> TransitionResult:
    """Replace a memory by a successor: a new one made from `content` (same kind, tags,
    metadata and importance) or an existing active one named by `by`."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    if (params.content is None) == (params.by is None):
        raise InvalidParams("give exactly one of content and by", path="$.params.content")
    if params.by == params.id:
        raise InvalidParams("a memory cannot supersede itself", path="$.params.by")
    if params.content is not None:
        check_content(params.content, ctx.runtime.config.max_content_chars)
    if params.refs and params.content is None:
        raise InvalidParams("refs are for a new successor (with content)", path="$.params.refs")
    moment = _succession_moment(params.valid_from)
    store = ctx.runtime.store()
    with store.reading(ctx.token) as conn:
        template = find(conn, scope, params.id)
    new = None if params.content is None else _successor(scope, template, params, moment)
    window = threads.window(ctx)
    windowed = new is not None and new.thread is not None and not window.empty
    index = None if new is None else embedding.ready_index(ctx)
    vectors = (
        {}
        if index is None or new is None or windowed
        else embedding.embed(index, [(new.content, None)])
    )
    ctx.token.check()
    created: list[int] = []
    with store.writing(ctx.token) as conn:
        record = find(conn, scope, params.id)
        next_state("supersede", record.status)  # refuse before creating a successor
        start = record.valid_from or record.created_at
        # At the default moment, a memory recorded in the same millisecond ends as it starts.
        if moment < start or (params.valid_from is not None and moment == start):
            raise InvalidParams(
                "the moment of succession must come after the memory's valid_from",
                path="$.params.valid_from",
            )
        if new is None:
            assert params.by is not None
            successor = _existing_successor(conn, scope, params.by)
        else:
            successor, created = _new_successor(conn, record, new, index, vectors)
        memory_sql.set_successor(conn, record.seq, successor, moment)
        moved = _move(
            conn,
            record,
            "supersede",
            reason=params.reason,
            source=params.source,
            window=window,
            successor=successor,
        )
        rewindowed = moved.rewindowed
        if windowed and created:
            arrived = thread_sql.refresh(conn, created, window, arrived=True)
            rewindowed = sorted({*rewindowed, *arrived})
    if new is not None and not windowed:
        embedding.wrote(ctx, index)
    threads.embed_rewindowed(ctx, index, rewindowed, created=created if windowed else ())
    return TransitionResult(
        id=record.id,
        status=moved.status,
        impact=moved.impact,
        successor=successor,
    )


def _succession_moment(valid_from: str | None) -> str:
    """When the old memory stopped holding true and a new successor started to: the given
    moment, or now. Not in the future: searches without `as_of` stop serving the old memory
    at once (its status says superseded), so a later moment would leave a gap until then."""
    now = now_rfc3339()
    moment = normalize_time(valid_from, "$.params.valid_from") or now
    if moment > now:
        raise InvalidParams(
            "the moment of succession cannot be in the future", path="$.params.valid_from"
        )
    return moment


def _successor(
    scope: str, template: MemoryRecord, params: SupersedeParams, moment: str
) -> NewMemory:
    """A turn of a thread is replaced in its place: the successor takes its thread and event
    time (the successor then follows it in write order); otherwise neither."""
    assert params.content is not None
    return NewMemory(
        scope=scope,
        kind=template.kind,
        content=params.content,
        tags=template.tags,
        metadata=template.metadata,
        source=source_dict(params.source),
        importance=template.importance,
        client_token=None,
        occurred_at=template.occurred_at if template.thread is not None else None,
        thread=template.thread,
        refs=list(dict.fromkeys(params.refs)),
        valid_from=moment,
    )


def _existing_successor(conn: apsw.Connection, scope: str, by: str) -> str:
    record = memory_sql.get(conn, scope, by)
    if record is None or record.status in HIDDEN:
        raise NotFound("successor memory not found", id=by, path="$.params.by")
    if record.status != "active":
        raise Conflict("the successor must be active", state=record.status, path="$.params.by")
    return record.id


def _new_successor(
    conn: apsw.Connection,
    record: MemoryRecord,
    new: NewMemory,
    index: Any,
    vectors: dict[embedding.Text, list[bytes]],
) -> tuple[str, list[int]]:
    """Insert the successor, or take the live memory that already says exactly this; returns
    its id and the seq of a successor inserted here."""
    citing.check_refs(conn, new.scope, new.refs, "$.params.refs")
    existing = creation.existing_id(conn, new)
    if existing == record.id:
        raise InvalidParams("the successor must say something new", path="$.params.content")
    if existing is not None:
        return existing, []
    memory_id, seq = creation.insert(conn, new, index, vectors)
    return memory_id, [seq]
