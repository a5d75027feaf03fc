"""`memory.*`: remember, get, list, forget and search."""

from __future__ import annotations

import base64
import binascii
import math
from collections.abc import Iterator
from typing import Any

import msgspec
import orjson

from memproc.errors import InvalidParams, NotFound
from memproc.ops.context import OpContext
from memproc.protocol.messages import (
    ForgetParams,
    ForgetResult,
    GetParams,
    GetResult,
    ListParams,
    ListResult,
    Memory,
    RememberParams,
    RememberResult,
    SearchHit,
    SearchParams,
    SearchResult,
    Source,
    StageRanks,
)
from memproc.store import MemoryRecord, NewMemory
from memproc.store import memories as memory_sql
from memproc.store.quoting import fts_match_any

# Deeper metadata than this is refused: nothing legitimate needs it, and it bounds recursion.
MAX_METADATA_DEPTH = 32


def remember(ctx: OpContext, params: RememberParams) -> RememberResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    _check_content(ctx, params.content)
    _check_metadata(ctx, params.metadata)
    new = NewMemory(
        scope=scope,
        kind=params.kind,
        content=params.content,
        tags=list(dict.fromkeys(params.tags)),
        metadata=params.metadata,
        source=_source_dict(params.source),
        importance=params.importance,
        client_token=params.client_token,
    )
    with ctx.runtime.store().writing(ctx.token) as conn:
        existing = _existing_id(conn, new)
        if existing is not None:
            return RememberResult(id=existing, created=False)
        return RememberResult(id=memory_sql.insert(conn, new), created=True)


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
    return GetResult(memory=_memory(record))


def list_memories(ctx: OpContext, params: ListParams) -> ListResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    before = None if params.cursor is None else _decode_cursor(params.cursor)
    with ctx.runtime.store().reading(ctx.token) as conn:
        records = memory_sql.list_page(
            conn, scope, kinds=params.kinds, before_seq=before, limit=params.limit + 1
        )
    page, more = records[: params.limit], len(records) > params.limit
    next_cursor = _encode_cursor(page[-1].seq) if more else None
    return ListResult(items=[_memory(r) for r in page], next_cursor=next_cursor)


def forget(ctx: OpContext, params: ForgetParams) -> ForgetResult:
    scope = ctx.runtime.scopes.resolve(params.scope)
    with ctx.runtime.store().writing(ctx.token) as conn:
        record = memory_sql.get(conn, scope, params.id)
        if record is None:
            raise NotFound("memory not found", id=params.id)
        if record.status == "forgotten":
            return ForgetResult(id=params.id, status="forgotten", changed=False)
        memory_sql.set_status(conn, scope, params.id, "forgotten", params.reason)
    return ForgetResult(id=params.id, status="forgotten", changed=True)


def search(ctx: OpContext, params: SearchParams) -> SearchResult:
    scopes = ctx.runtime.scopes.resolve_many(params.scope, params.scopes)
    match = fts_match_any(params.query)
    if match is None:
        return SearchResult(results=[], mode="lexical")
    with ctx.runtime.store().reading(ctx.token) as conn:
        rows = memory_sql.search_lexical(
            conn, match, scopes=scopes, kinds=params.kinds, limit=params.limit
        )
    hits = [
        _hit(row.record, score=-row.bm25, ranks=StageRanks(lexical=rank))
        for rank, row in enumerate(rows, start=1)
    ]
    return SearchResult(results=hits, mode="lexical")


# -- validation the types cannot express ---------------------------------------------------


def _check_content(ctx: OpContext, content: str) -> None:
    limit = ctx.runtime.config.max_content_chars
    if len(content) > limit:
        raise InvalidParams(f"content exceeds {limit} characters", path="$.params.content")
    if not content.strip():
        raise InvalidParams("content must not be blank", path="$.params.content")


def _check_metadata(ctx: OpContext, metadata: dict[str, Any]) -> None:
    if _depth(metadata) > MAX_METADATA_DEPTH:
        raise InvalidParams(
            f"metadata nests deeper than {MAX_METADATA_DEPTH} levels", path="$.params.metadata"
        )
    if not all(_finite(item) for item in _walk(metadata)):
        # JSON has no infinity, yet `1e999` decodes to one; it would be stored as null.
        raise InvalidParams("metadata numbers must be finite", path="$.params.metadata")
    limit = ctx.runtime.config.max_metadata_bytes
    if len(orjson.dumps(metadata)) > limit:
        raise InvalidParams(f"metadata exceeds {limit} bytes as JSON", path="$.params.metadata")


def _walk(value: Any) -> Iterator[Any]:
    """Every value nested in a JSON value, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _finite(item: Any) -> bool:
    return not isinstance(item, float) or math.isfinite(item)


def _depth(value: Any) -> int:
    """Nesting depth of a JSON value, computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((child, level + 1) for child in children)
    return deepest


# -- mapping store records to protocol types -----------------------------------------------


def _source_dict(source: Source | None) -> dict[str, str]:
    if source is None:
        return {}
    return {k: v for k, v in msgspec.structs.asdict(source).items() if v is not None}


def _memory(record: MemoryRecord) -> Memory:
    return Memory(
        id=record.id,
        scope=record.scope,
        kind=record.kind,  # type: ignore[arg-type]
        content=record.content,
        tags=record.tags,
        metadata=record.metadata,
        source=Source(**record.source),
        importance=record.importance,
        status=record.status,  # type: ignore[arg-type]
        created_at=record.created_at,
        updated_at=record.updated_at,
    )


def _hit(record: MemoryRecord, *, score: float, ranks: StageRanks) -> SearchHit:
    return SearchHit(
        id=record.id,
        scope=record.scope,
        kind=record.kind,  # type: ignore[arg-type]
        content=record.content,
        score=score,
        status=record.status,  # type: ignore[arg-type]
        created_at=record.created_at,
        tags=record.tags,
        source=Source(**record.source),
        ranks=ranks,
    )


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
