"""Vectors on write: computed before the write lock is taken, stored inside the write.

Embedding is the slow part of a write, so it never runs while the lock is held. Without a
ready embedder nothing is computed here; the background backfill embeds those memories (and
re-embeds edited ones, whose content hash no longer matches their vectors) once one is ready.
"""

from __future__ import annotations

from collections.abc import Sequence

import apsw

from memproc.ops.context import OpContext
from memproc.retrieval.indexing import VectorIndex, embed_contents
from memproc.store import memories as memory_sql
from memproc.store import vectors as vector_sql
from memproc.store.vectors import PendingMemory

Text = tuple[str, str | None]  # content, context


def ready_index(ctx: OpContext) -> VectorIndex | None:
    """The embedder's index if it is ready now: a write never waits for a model."""
    return ctx.runtime.vectors.vector_index(wait_s=0.0, required=False)


def wrote(ctx: OpContext, index: VectorIndex | None) -> None:
    """After a write commits: if it stored memories without vectors, make sure a backfill
    pass will see them (see VectorService.wrote_without_vectors)."""
    if index is None:
        ctx.runtime.vectors.wrote_without_vectors()


def embed(index: VectorIndex, texts: Sequence[Text]) -> dict[Text, list[bytes]]:
    """Vectors for each distinct (content, context), then registers the embedder (its own
    short write) so that the caller's write does not have to."""
    keys = list(dict.fromkeys(texts))
    computed = embed_contents(index.embedder, [k[0] for k in keys], [k[1] for k in keys])
    index.row()
    return dict(zip(keys, computed, strict=True))


def store_vectors(
    conn: apsw.Connection,
    index: VectorIndex,
    *,
    seq: int,
    scope: str,
    kind: str,
    text: Text,
    vectors: list[bytes],
    replace: bool,
) -> None:
    """`replace`: the memory may have vectors already (an edit); a memory inserted in this
    transaction has none, and looking for them would be two statements for nothing."""
    content, context = text
    pending = PendingMemory(seq, scope, kind, content, memory_sql.content_hash(content), context)
    store = vector_sql.put_vectors if replace else vector_sql.add_vectors
    store(conn, index.row(), pending, vectors)
