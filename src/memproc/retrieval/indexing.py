"""Keeping vectors in step with memories: embedding on write, and backfilling the rest.

A memory written while no embedder was ready (or by an older model) has no vectors for the
current embedder. The backfill finds those in batches, embeds them outside any transaction,
and writes each batch's vectors in one short write, so requests are never blocked for long.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, Literal

import msgspec

from memproc.retrieval.chunking import chunk_text
from memproc.store import vectors as vector_sql
from memproc.store.storage import Storage
from memproc.store.vectors import EmbedderRow, PendingMemory

log = logging.getLogger("memproc.indexing")

# Bump when the way text becomes vectors changes (chunking, pooling code), so that vectors
# made the old way are not mixed with new ones: a new fingerprint means a new vector table.
VECTOR_RECIPE = "chunks-v1"
BACKFILL_BATCH = 64

Progress = Callable[[int, int], None]


def embedder_fingerprint(embedder: Any) -> str:
    return manifest_fingerprint(embedder.manifest)


def manifest_fingerprint(manifest: Any) -> str:
    """Identifies the vectors a model makes: its pinned files, settings and our recipe."""
    encoded = msgspec.json.encode(manifest)
    return hashlib.sha256(VECTOR_RECIPE.encode() + b"\0" + encoded).hexdigest()


# A threaded memory's window: the text of its neighbours before and after it (see
# store/threads.py); (None, None) or None when it has none.
Window = tuple[str | None, str | None]
# Which part of a memory's index entry a chunk was made from, in the order chunks are stored.
ChunkPart = Literal["own", "context", "window"]


def chunk_parts(
    embedder: Any, content: str, context: str | None = None, window: Window | None = None
) -> list[tuple[ChunkPart, str]]:
    """A memory's chunks, each with the part it stands for: the content's own chunks; with a
    context, the chunks of context and content together; with thread neighbours, the chunks
    of the window read in order (turns before, the content, turns after). A memory scores as
    its best chunk, so what is added can only help it be found."""
    max_tokens = embedder.manifest.max_length
    chunks: list[tuple[ChunkPart, str]] = [
        ("own", chunk) for chunk in chunk_text(content, max_tokens, embedder.token_counts)
    ]
    if context:
        combined = f"{context}\n{content}"
        chunks += [("context", c) for c in chunk_text(combined, max_tokens, embedder.token_counts)]
    before, after = window or (None, None)
    if before or after:
        read_in_order = "\n".join(part for part in (before, content, after) if part)
        chunks += [
            ("window", c) for c in chunk_text(read_in_order, max_tokens, embedder.token_counts)
        ]
    return chunks


def embed_contents(
    embedder: Any,
    contents: Sequence[str],
    contexts: Sequence[str | None] | None = None,
    windows: Sequence[Window | None] | None = None,
) -> list[list[bytes]]:
    """Per content, the float32 bytes of each of its chunks' vectors (see `chunk_parts`).
    All chunks of all contents go through the embedder together so batching sees the whole
    workload."""
    contexts = contexts or [None] * len(contents)
    windows = windows or [None] * len(contents)
    chunked = [
        [text for _, text in chunk_parts(embedder, content, context, window)]
        for content, context, window in zip(contents, contexts, windows, strict=True)
    ]
    flat = [chunk for chunks in chunked for chunk in chunks]
    matrix = embedder.embed_documents(flat)
    result, start = [], 0
    for chunks in chunked:
        result.append([row.tobytes() for row in matrix[start : start + len(chunks)]])
        start += len(chunks)
    return result


class VectorIndex:
    """One embedder's view of the store: its registry row and the vectors it owns."""

    def __init__(self, store: Storage, embedder: Any) -> None:
        self.store = store
        self.embedder = embedder
        self.fingerprint = embedder_fingerprint(embedder)
        self._row: EmbedderRow | None = None

    def find_row(self, conn: Any) -> EmbedderRow | None:
        """The embedder's row as `conn`'s snapshot sees it; read-only (searches must not write).

        Looked up in the snapshot each time (one indexed read), never taken from `row()`'s
        memo: another thread may have registered the embedder after this snapshot began, and
        then the snapshot's schema has no vector table to query."""
        found = vector_sql.find_embedder(conn, self.fingerprint)
        if found is not None and self._row is None:
            self._row = found
        return found

    def row(self) -> EmbedderRow:
        """The embedder's row, registered (with its vec0 table) on first use."""
        if self._row is None:
            with self.store.reading() as conn:
                self.find_row(conn)
        if self._row is None:
            with self.store.writing() as conn:
                self._row = vector_sql.register_embedder(
                    conn, self.embedder.name, self.fingerprint, self.embedder.dims
                )
        return self._row

    def backfill(
        self, progress: Progress | None = None, should_stop: Callable[[], bool] = bool
    ) -> int:
        """Embed every searchable memory that lacks current vectors; returns how many."""
        row = self.row()  # registers it on first use: a write, so not inside the read
        with self.store.reading() as conn:
            total = vector_sql.count_pending(conn, row)
        if not total:
            return 0
        report = None if progress is None else lambda done: progress(done, total)
        return self.embed_pending_after(0, should_stop, report)

    def embed_pending_after(
        self,
        after_seq: int,
        should_stop: Callable[[], bool] = bool,
        report: Callable[[int], None] | None = None,
    ) -> int:
        """Embed the memories past `after_seq` that lack current vectors, a batch at a time;
        returns how many. The seq bound keeps a deferred write's pass a short range read
        however large the store."""
        row = self.row()
        done = 0
        while not should_stop():
            with self.store.reading() as conn:
                batch = vector_sql.pending_memories(conn, row, BACKFILL_BATCH, after_seq)
            if not batch:
                break
            self._write_batch(row, batch)
            done, after_seq = done + len(batch), batch[-1].seq
            if report is not None:
                report(done)
        return done

    def embed_pending_among(self, seqs: Sequence[int]) -> int:
        """Embed those of `seqs` that lack current vectors (thread neighbours a write
        re-indexed, wherever they lie in the store); returns how many."""
        row = self.row()
        done = 0
        for start in range(0, len(seqs), BACKFILL_BATCH):
            with self.store.reading() as conn:
                batch = vector_sql.pending_among(conn, row, seqs[start : start + BACKFILL_BATCH])
            if batch:
                self._write_batch(row, batch)
                done += len(batch)
        return done

    def _write_batch(self, row: EmbedderRow, batch: list[PendingMemory]) -> None:
        vectors = embed_contents(
            self.embedder,
            [m.content for m in batch],
            [m.context for m in batch],
            [(m.neighbour_before, m.neighbour_after) for m in batch],
        )
        with self.store.writing() as conn:
            for memory, memory_vectors in zip(batch, vectors, strict=True):
                if vector_sql.is_current(conn, memory):
                    vector_sql.put_vectors(conn, row, memory, memory_vectors)
