"""`memory.*` writes and reads: remember (one or a batch), get, list, forget, feedback."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from memproc.errors import InvalidParams, NotFound
from memproc.ops.context import OpContext
from memproc.ops.mapping import memory_view, source_dict
from memproc.ops.validation import check_content, check_metadata, normalize_time
from memproc.protocol.messages import (
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
    RememberItem,
    RememberParams,
    RememberResult,
)
from memproc.retrieval.indexing import embed_contents
from memproc.store import NewMemory
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.store.vectors import PendingMemory


def remember(ctx: OpContext, params: RememberParams) -> RememberResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    return _remember_all(ctx, [_new_memory(ctx, scope, params, "$.params")])[0]


def remember_batch(ctx: OpContext, params: RememberBatchParams) -> RememberBatchResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    news = [
        _new_memory(ctx, scope, item, f"$.params.items[{i}]") for i, item in enumerate(params.items)
    ]
    return RememberBatchResult(results=_remember_all(ctx, news))


def _new_memory(ctx: OpContext, scope: str, item: RememberItem, path: str) -> NewMemory:
    config = ctx.runtime.config
    check_content(item.content, config.max_content_chars, f"{path}.content")
    check_metadata(item.metadata, config.max_metadata_bytes, f"{path}.metadata")
    if item.context is not None:
        check_content(item.context, config.max_content_chars, f"{path}.context")
    return NewMemory(
        scope=scope,
        kind=item.kind,
        content=item.content,
        tags=list(dict.fromkeys(item.tags)),
        metadata=item.metadata,
        source=source_dict(item.source),
        importance=item.importance,
        client_token=item.client_token,
        occurred_at=normalize_time(item.occurred_at, f"{path}.occurred_at"),
        context=item.context,
    )


def _remember_all(ctx: OpContext, news: list[NewMemory]) -> list[RememberResult]:
    """Store new memories in one transaction, with vectors when an embedder is ready.

    Embedding happens before the write lock is taken (it is the slow part) and only for the
    memories that are not idempotent replays; the write re-checks, so a concurrent writer of
    the same memory still yields one row. Without a ready embedder the backfill embeds later.
    """
    store = ctx.runtime.store()
    with store.reading(ctx.token) as conn:
        fresh = [i for i, new in enumerate(news) if _existing_id(conn, new) is None]
    index = ctx.runtime.vector_index(wait_s=0.0, required=False)
    vectors: dict[int, list[bytes]] = {}
    if index is not None and fresh:
        keys = list(dict.fromkeys((news[i].content, news[i].context) for i in fresh))
        computed = embed_contents(index.embedder, [k[0] for k in keys], [k[1] for k in keys])
        embedded = dict(zip(keys, computed, strict=True))
        vectors = {i: embedded[(news[i].content, news[i].context)] for i in fresh}
        index.row()  # registers the embedder (its own short write) before ours begins
    ctx.token.check()
    results = []
    with store.writing(ctx.token) as conn:
        for i, new in enumerate(news):
            existing = _existing_id(conn, new)
            if existing is not None:
                results.append(RememberResult(id=existing, created=False))
                continue
            memory_id, seq = memory_sql.insert(conn, new)
            if index is not None and i in vectors:
                pending = PendingMemory(
                    seq,
                    new.scope,
                    new.kind,
                    new.content,
                    memory_sql.content_hash(new.content),
                    new.context,
                )
                vector_sql.put_vectors(conn, index.row(), pending, vectors[i])
            results.append(RememberResult(id=memory_id, created=True))
    return results


def _existing_id(conn: Any, new: NewMemory) -> str | None:
    """Idempotency: a replayed client_token, or the same live content in the same scope and kind."""
    if new.client_token is not None:
        found = memory_sql.find_by_client_token(conn, new.scope, new.client_token)
        if found is not None:
            return found
    return memory_sql.find_live_duplicate(conn, new)


def get(ctx: OpContext, params: GetParams) -> GetResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().reading(ctx.token) as conn:
        record = memory_sql.get(conn, scope, params.id)
    if record is None or record.status == "forgotten":
        raise NotFound("memory not found", id=params.id)
    return GetResult(memory=memory_view(record))


def list_memories(ctx: OpContext, params: ListParams) -> ListResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    before = None if params.cursor is None else _decode_cursor(params.cursor)
    with ctx.runtime.store().reading(ctx.token) as conn:
        records = memory_sql.list_page(
            conn, scope, kinds=params.kinds, before_seq=before, limit=params.limit + 1
        )
    page, more = records[: params.limit], len(records) > params.limit
    next_cursor = _encode_cursor(page[-1].seq) if more else None
    return ListResult(items=[memory_view(r) for r in page], next_cursor=next_cursor)


def forget(ctx: OpContext, params: ForgetParams) -> ForgetResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        record = memory_sql.get(conn, scope, params.id)
        if record is None:
            raise NotFound("memory not found", id=params.id)
        if record.status == "forgotten":
            return ForgetResult(id=params.id, status="forgotten", changed=False)
        memory_sql.set_status(conn, record.seq, "forgotten", params.reason)
    return ForgetResult(id=params.id, status="forgotten", changed=True)


def feedback(ctx: OpContext, params: FeedbackParams) -> FeedbackResult:
    """Record that a retrieved memory was (or was not) used; the access boost may read it."""
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        record = memory_sql.get(conn, scope, params.id)
        if record is None or record.status == "forgotten":
            raise NotFound("memory not found", id=params.id)
        vector_sql.record_access(conn, [record.seq], "feedback", params.used)
    return FeedbackResult(recorded=True)


# -- cursors: opaque to clients, a position in `seq` order to us ---------------------------

_CURSOR_PREFIX = "m1:"


def _encode_cursor(seq: int) -> str:
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{seq}".encode()).decode().rstrip("=")


def _decode_cursor(cursor: str) -> int:
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        if text.startswith(_CURSOR_PREFIX):
            seq = int(text[len(_CURSOR_PREFIX) :])
            if 0 < seq < 2**63:  # a rowid: larger ints cannot even be bound
                return seq
    except (binascii.Error, UnicodeDecodeError, ValueError):
        pass
    raise InvalidParams("cursor is not one this server issued", path="$.params.cursor")
