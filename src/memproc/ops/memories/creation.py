"""Creating memories, shared by remember, remember_batch and supersede: validation,
idempotency, refs and vectors, all of one write in one transaction."""

from __future__ import annotations

from typing import Any

from memproc.clock import now_rfc3339
from memproc.ops.context import OpContext
from memproc.ops.memories import citing, embedding, threads
from memproc.ops.memories.views import source_dict
from memproc.ops.validation import check_content, check_metadata, check_window, normalize_time
from memproc.retrieval.indexing import VectorIndex
from memproc.store import NewMemory, citations
from memproc.store import memories as memory_sql
from memproc.store import threads as thread_sql
from memproc.store.annotations import memory_ref
from memproc.wire.messages import RememberItem, RememberResult

Vectors = dict[embedding.Text, list[bytes]]
# Memories embedded at a time when the caller asked for progress: each slice is reported, and
# a cancellation is noticed between slices instead of after the whole batch.
PROGRESS_SLICE = 32


def new_memory(ctx: OpContext, scope: str, item: RememberItem, path: str) -> NewMemory:
    config = ctx.runtime.config
    check_content(item.content, config.max_content_chars, f"{path}.content")
    check_metadata(item.metadata, config.max_metadata_bytes, f"{path}.metadata")
    if item.context is not None:
        check_content(item.context, config.max_content_chars, f"{path}.context")
    valid_from = normalize_time(item.valid_from, f"{path}.valid_from")
    valid_until = normalize_time(item.valid_until, f"{path}.valid_until")
    # Without valid_from the window opens when the memory is recorded: an end before now
    # needs its start.
    check_window(valid_from or now_rfc3339(), valid_until, path)
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
        thread=threads.thread_key(item),
        refs=list(dict.fromkeys(item.refs)),
        valid_from=valid_from,
        valid_until=valid_until,
    )


def remember_all(
    ctx: OpContext, news: list[tuple[NewMemory, str]], *, defer_vectors: bool = False
) -> list[RememberResult]:
    """Store new memories in one transaction, with vectors when an embedder is ready.

    Embedding happens before the write lock is taken and only for the memories that are not
    idempotent replays; the write re-checks, so a concurrent writer of the same memory still
    yields one row. Refs are checked inside the write, against what is committed, so a bad
    ref anywhere in a batch leaves nothing behind. With `defer_vectors` the rows are committed
    without vectors and the vector service's worker embeds them after the answer
    (`VectorService.embed_later`); searches wait for them. Memories written while the
    embedder is still loading go to the same worker, which waits for the model.
    """
    store = ctx.runtime.store()
    window = threads.window(ctx)
    with store.reading(ctx.token) as conn:
        fresh = [new for new, _ in news if existing_id(conn, new) is None]
    index = embedding.ready_index(ctx)
    vectors: Vectors = {}
    # A memory that joins a thread is embedded after the commit, with its window (known only
    # inside the write); the others as before.
    plain = [new for new in fresh if not _windowed(new, window)]
    if index is not None and plain and not defer_vectors:
        vectors = _embed(ctx, index, [_text(new) for new in plain], len(news))
    ctx.token.check()
    results, created_seqs, threaded_seqs = [], [], []
    with store.writing(ctx.token) as conn:
        for new, path in news:
            citing.check_refs(conn, new.scope, new.refs, f"{path}.refs")
            existing = existing_id(conn, new)
            if existing is not None:
                results.append(RememberResult(id=existing, created=False))
                continue
            memory_id, seq = insert(conn, new, index, vectors)
            results.append(RememberResult(id=memory_id, created=True))
            created_seqs.append(seq)
            if _windowed(new, window):
                threaded_seqs.append(seq)
        rewindowed = thread_sql.refresh(conn, threaded_seqs, window, arrived=True)
    _after_commit(ctx, index, created_seqs, threaded_seqs, rewindowed, defer_vectors)
    if ctx.progress is not None:
        embedded = len(plain) if vectors else 0
        ctx.progress(embedded + len(news), embedded + len(news), f"stored {len(news)} items")
    return results


def _windowed(new: NewMemory, window: thread_sql.Window) -> bool:
    return new.thread is not None and not window.empty


def _after_commit(
    ctx: OpContext,
    index: VectorIndex | None,
    created: list[int],
    threaded: list[int],
    rewindowed: list[int],
    defer: bool,
) -> None:
    """Vectors for what the write left without them: deferred memories go to the worker,
    which searches wait for; threaded ones (new, and the neighbours they re-windowed) follow
    the same way, or are embedded here when the caller waits for vectors."""
    vectors_service = ctx.runtime.vectors
    threaded_set = set(threaded)
    others = [seq for seq in created if seq not in threaded_set]
    if others and (
        (index is not None and defer) or (index is None and vectors_service.embedder_loading())
    ):
        vectors_service.embed_later(others)  # searches wait for these vectors
    elif others:
        embedding.wrote(ctx, index)
    neighbours = [seq for seq in rewindowed if seq not in threaded_set]
    threads.embed_rewindowed(ctx, index, neighbours, created=threaded, defer=defer)


def _embed(ctx: OpContext, index: VectorIndex, texts: list[embedding.Text], stored: int) -> Vectors:
    """All the vectors at once, or slice by slice when progress is asked for: the steps are
    the memories to embed, then the ones to store."""
    if ctx.progress is None:
        return embedding.embed(index, texts)
    vectors: Vectors = {}
    for start in range(0, len(texts), PROGRESS_SLICE):
        ctx.token.check()
        vectors.update(embedding.embed(index, texts[start : start + PROGRESS_SLICE]))
        done = min(start + PROGRESS_SLICE, len(texts))
        ctx.progress(done, len(texts) + stored, f"embedded {done} of {len(texts)} new memories")
    return vectors


def insert(
    conn: Any, new: NewMemory, index: VectorIndex | None, vectors: Vectors
) -> tuple[str, int]:
    """Insert one new memory with its refs and, if they were computed, its vectors; returns
    its id and seq."""
    memory_id, seq = memory_sql.insert(conn, new)
    citations.add(conn, new.scope, memory_ref(memory_id), new.refs)
    text = _text(new)
    if index is not None and text in vectors:
        embedding.store_vectors(
            conn,
            index,
            seq=seq,
            scope=new.scope,
            kind=new.kind,
            text=text,
            vectors=vectors[text],
            replace=False,
        )
    return memory_id, seq


def _text(new: NewMemory) -> embedding.Text:
    return new.content, new.context


def existing_id(conn: Any, new: NewMemory) -> str | None:
    """Idempotency: a replayed client_token, or the same live content in the same scope and kind."""
    if new.client_token is not None:
        found = memory_sql.find_by_client_token(conn, new.scope, new.client_token)
        if found is not None:
            return found
    return memory_sql.find_live_duplicate(conn, new)
