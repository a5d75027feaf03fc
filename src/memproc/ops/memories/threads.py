"""Conversation-aware indexing on the write path: which thread a memory joins, and the
vectors of the memories whose thread window a write changed.

The windows themselves are derived inside each write's transaction by `store.threads`; their
vectors are made after the commit (embedding never runs under the write lock), through the
same paths as a plain memory's: the deferred worker, which searches wait for
(`VectorService.caught_up`), or in the call itself when the caller asked to wait for vectors.
"""

from __future__ import annotations

from collections.abc import Sequence

from memproc.ops.context import OpContext
from memproc.retrieval.indexing import VectorIndex
from memproc.store.threads import Window
from memproc.wire.messages import RememberItem, Source


def thread_key(item: RememberItem) -> str | None:
    """An explicit `thread`, else the harness's session: turns of one session are a thread."""
    if item.thread is not None:
        return item.thread
    return _session(item.source)


def _session(source: Source | None) -> str | None:
    return source.session if source is not None and source.session else None


def window(ctx: OpContext) -> Window:
    config = ctx.runtime.config
    return Window(
        before=config.thread_window_before,
        after=config.thread_window_after,
        dense=config.thread_dense_windows,
    )


def embed_rewindowed(
    ctx: OpContext,
    index: VectorIndex | None,
    rewindowed: Sequence[int],
    *,
    created: Sequence[int] = (),
    defer: bool = True,
) -> None:
    """After a commit: vectors for `rewindowed` (memories whose window changed, anywhere in
    the store) and for `created` (new memories, at the store's end) that the write left
    without them. Deferred, searches wait for them; otherwise made here, before the answer.
    Without a ready embedder, the backfill (or the worker, once a loading model is ready)
    embeds them: their vectors are stale by `index_sha256`."""
    if not rewindowed and not created:
        return
    vectors = ctx.runtime.vectors
    if index is None:
        if vectors.embedder_loading():
            vectors.embed_later(list(created), rewindowed)
        else:
            vectors.wrote_without_vectors()
    elif defer:
        vectors.embed_later(list(created), rewindowed)
    else:
        index.embed_pending_among(sorted({*created, *rewindowed}))
