"""The thread window in the dense channel, scored at query time from stored vectors.

A turn of a conversation rarely says on its own what it is about ("Yes, last week!"); the
turns around it do. FTS5 reads each threaded memory's neighbours' words (store/threads.py).
For the dense channel the same window could be embedded as an extra chunk per memory
(`Config.thread_dense_windows`), but that chunk costs several turns of model time on every
write, and each write re-embeds the neighbours whose window it changed. Here the window is
scored instead from the vectors every turn already has: the query against the normalised sum
of the window's turn vectors (each turn's chunk nearest the query), which is close to what
embedding the turns' text together gives a mean-pooled model, and costs nothing at write.

A memory then scores in the dense channel as the better of its own chunks and its window,
as it would with a window chunk. A memory whose entry holds no neighbours (no thread, or
alone in it) keeps its own score: for it this changes nothing. `with_windows` reads the
windows and the vectors inside the search's read transaction; the rest is pure.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import apsw

from memproc.store import threads as thread_sql
from memproc.store import vectors as vector_sql
from memproc.store.vectors import EmbedderRow

if TYPE_CHECKING:  # numpy-backed: not imported at start-up
    import numpy as np

    from memproc.retrieval.dense_cache import DenseCache


def with_windows(
    conn: apsw.Connection,
    embedder: EmbedderRow,
    cache: DenseCache | None,
    vector: bytes,
    best: dict[int, float],
    keep: int | None = None,
) -> tuple[dict[int, float], dict[int, float]]:
    """The dense hits `best` (seq -> similarity) with thread windows scored: each hit, and
    each memory whose window holds a hit, scores as the better of its own chunks and its
    window. Returns the merged scores best first (equal scores by seq), the first `keep`
    of them (None: all), and the window scores."""
    import numpy as np

    from memproc.retrieval.dense_cache import dot_rows

    around = thread_sql.window_members(conn, list(best))
    more = reached(around) - set(around)
    spans = around | (thread_sql.window_members(conn, sorted(more)) if more else {})
    if not spans:
        return best, {}
    query = np.frombuffer(vector, dtype=np.float32)
    seqs, nearest = _nearest_chunks_of(conn, embedder, cache, sorted(reached(spans)), query)
    scored = window_scores(query, spans, seqs, nearest)
    own = dict(zip(seqs.tolist(), dot_rows(nearest, query).tolist(), strict=True))
    merged = dict(best)
    for seq, similarity in scored.items():
        mine = best.get(seq, own.get(seq))  # not among the hits: its nearest chunk's
        merged[seq] = similarity if mine is None else max(mine, similarity)
    ordered = sorted(merged.items(), key=lambda item: (-item[1], item[0]))
    return dict(ordered[:keep]), scored


def _nearest_chunks_of(
    conn: apsw.Connection,
    embedder: EmbedderRow,
    cache: DenseCache | None,
    seqs: list[int],
    query: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """Those of `seqs` with vectors (ascending) and each one's chunk nearest the query, from
    the in-memory copy when it is loaded (the dense query has just brought it up to date),
    else from the store."""
    import numpy as np

    from memproc.retrieval.dense_cache import best_rows

    if cache is not None and cache.loaded:
        return cache.nearest_chunks_of(seqs, query)
    stored = vector_sql.vectors_of(conn, embedder, seqs)
    labels = np.array([seq for seq, chunks in stored.items() for _ in chunks], dtype=np.int64)
    flat = [np.frombuffer(v, dtype=np.float32) for chunks in stored.values() for v in chunks]
    matrix = np.stack(flat) if flat else np.zeros((0, embedder.dims), dtype=np.float32)
    return best_rows(labels, matrix, query)


def window_scores(
    query: np.ndarray,
    windows: Mapping[int, Sequence[int]],
    seqs: np.ndarray,
    nearest: np.ndarray,
) -> dict[int, float]:
    """seq -> the cosine of `query` (unit length) with the normalised sum of its window's
    members' vectors, for each seq of `windows` (seq -> its window's member seqs, itself
    included) whose window has at least two members with vectors (a window of one is the
    memory itself). A member is represented by its chunk nearest the query: `seqs`
    (ascending) and `nearest` (one row per seq)."""
    import numpy as np

    from memproc.retrieval.dense_cache import dot_rows

    if not windows or not len(seqs):
        return {}
    owners = list(windows)
    lengths = np.fromiter((len(windows[seq]) for seq in owners), dtype=np.int64, count=len(owners))
    flat = np.fromiter(
        (m for seq in owners for m in windows[seq]), dtype=np.int64, count=int(lengths.sum())
    )
    # Each member's row in `nearest`, or `missing` (a zero row appended below) when it has
    # no vectors; laid out one window per row, padded with `missing`.
    missing = len(seqs)
    found = np.minimum(np.searchsorted(seqs, flat), missing - 1)
    rows = np.where(seqs[found] == flat, found, missing)
    width = int(lengths.max())
    index = np.full((len(owners), width), missing, dtype=np.int64)
    index[np.repeat(np.arange(len(owners)), lengths), _offsets(lengths)] = rows
    # Each distinct member set is summed once, its rows in ascending order: the turns of a
    # short thread share one window, and must share its score to the last bit, whichever of
    # them asks and whichever store listed the members (float sums depend on their order).
    index.sort(axis=1)
    index[:, 1:][index[:, 1:] == index[:, :-1]] = missing  # a member named twice counts once
    index.sort(axis=1)
    enough = (index != missing).sum(axis=1) >= 2  # a window of one is the memory itself
    if not enough.any():
        return {}
    distinct, which = np.unique(index[enough], axis=0, return_inverse=True)
    padded = np.vstack([nearest, np.zeros((1, nearest.shape[1]), dtype=nearest.dtype)])
    totals = padded[distinct].sum(axis=1)
    norms = np.linalg.norm(totals, axis=1)
    # not a matrix product: BLAS may round a row differently by how many rows share the
    # call, and a window's score must not depend on which others were scored with it
    similarity = dot_rows(totals, query) / np.maximum(norms, 1e-12)
    kept = [seq for seq, ok in zip(owners, enough.tolist(), strict=True) if ok]
    return {
        seq: float(similarity[row])
        for seq, row in zip(kept, which.reshape(-1).tolist(), strict=True)
        if norms[row] > 0
    }


def _offsets(lengths: np.ndarray) -> np.ndarray:
    """0, 1, ..., n-1 for each length n, concatenated: each member's column in its row."""
    import numpy as np

    starts = np.repeat(np.cumsum(lengths) - lengths, lengths)
    return np.arange(int(lengths.sum())) - starts


def reached(windows: Mapping[int, Sequence[int]]) -> set[int]:
    """Every member of the given windows. A neighbour's own window holds the memory too when
    the window reaches as far back as forward (the default, 2 and 2), so these are the
    memories whose window score a hit may raise."""
    return {member for members in windows.values() for member in members}
