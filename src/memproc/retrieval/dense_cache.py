"""An in-memory copy of one embedder's vectors, for exact nearest-neighbour search at numpy
speed (sqlite-vec's own brute-force KNN is several times slower on the same rows).

sqlite-vec stays the source of truth. The copy is loaded once (in the background, after the
embedder is ready) and then kept current from the vector journal, which every write appends to
in the same transaction, so changes made by other processes on the same file show up too.
Until the copy is loaded, searches use sqlite-vec directly and lose nothing but speed.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence

import apsw
import numpy as np

from memproc.store import vectors as vector_sql
from memproc.store.vectors import EmbedderRow, VectorRow

# Rows read per step while loading, and spare rows allocated beyond the current count.
LOAD_BLOCK = 4096
LOAD_HEADROOM = 1024


class DenseCache:
    def __init__(self, embedder: EmbedderRow) -> None:
        self.embedder = embedder
        self._lock = threading.Lock()
        self._loading = threading.Lock()  # held while one thread loads the copy
        self._loaded = False
        self.too_large = False  # set when a load found more rows than allowed
        self._journal_id = 0
        self._position: dict[int, int] = {}  # vec0 rowid -> row in the arrays
        self._reset(LOAD_HEADROOM)
        self._scope_codes: dict[str, int] = {}
        self._kind_codes: dict[str, int] = {}

    @property
    def loaded(self) -> bool:
        return self._loaded

    @property
    def loading(self) -> bool:
        return self._loading.locked()

    def claim_loading(self) -> bool:
        """True for the one caller that should load; others search sqlite-vec meanwhile."""
        return self._loading.acquire(blocking=False)

    def release_loading(self) -> None:
        """Only the caller whose claim_loading() returned True calls this."""
        self._loading.release()

    def load(
        self,
        conn: apsw.Connection,
        max_rows: int | None = None,
        should_stop: Callable[[], bool] = bool,
    ) -> bool:
        """Read every vector (call inside a read transaction so rows and journal agree);
        False, leaving the copy unloaded, when there are more than `max_rows` or when
        `should_stop()` turns true between blocks."""
        with self._lock:
            _, newest = vector_sql.journal_bounds(conn, self.embedder)
            count = vector_sql.count_vector_rows(conn, self.embedder)
            if max_rows is not None and count > max_rows:
                return False
            self._reset(count + LOAD_HEADROOM)
            rows = vector_sql.iter_vector_rows(conn, self.embedder)
            while block := list(itertools.islice(rows, LOAD_BLOCK)):
                if should_stop():
                    self._reset(LOAD_HEADROOM)
                    return False
                self._append(block)
            self._journal_id = newest
            self._loaded = True
            return True

    def refresh(self, conn: apsw.Connection) -> bool:
        """Apply journal entries newer than the copy; False if it must be reloaded instead
        (the entries it needs were trimmed). Call inside the search's read transaction."""
        with self._lock:
            oldest, newest = vector_sql.journal_bounds(conn, self.embedder)
            if newest == self._journal_id:
                return True
            # Trimming goes by id across embedders, so another embedder's writes may have
            # removed all of this one's entries (0, 0): unseen changes may be among them.
            if oldest == 0 or oldest > self._journal_id + 1:
                self._loaded = False
                return False
            added: list[int] = []
            for rowid, was_added in vector_sql.journal_since(conn, self.embedder, self._journal_id):
                if was_added:
                    added.append(rowid)
                else:
                    self._kill(rowid)
                    if rowid in added:
                        added.remove(rowid)
            self._append(vector_sql.vector_rows_by_id(conn, self.embedder, added))
            self._journal_id = newest
            return True

    def nearest(
        self, query: np.ndarray, scopes: Sequence[str], kinds: Sequence[str] | None, k: int
    ) -> list[tuple[int, float]]:
        """(memory_seq, cosine distance) of the k nearest rows in the scopes, nearest first."""
        with self._lock:
            size = self._size
            matrix, seqs = self._matrix[:size], self._seqs[:size]
            mask = self._alive[:size] & np.isin(
                self._scopes[:size], self._codes(self._scope_codes, scopes)
            )
            if kinds is not None:
                mask &= np.isin(self._kinds[:size], self._codes(self._kind_codes, kinds))
        if not mask.any():
            return []
        similarity = dot_rows(matrix, query.astype(np.float32))
        similarity[~mask] = -np.inf
        count = min(k, int(mask.sum()))
        top = np.argpartition(-similarity, count - 1)[:count]
        top = top[np.argsort(-similarity[top], kind="stable")]
        return [(int(seqs[i]), float(1.0 - similarity[i])) for i in top]

    def nearest_chunks_of(
        self, seqs: Sequence[int], query: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """For those of `seqs` with live vectors: the seqs (ascending), and each one's chunk
        nearest `query` (a memories x dims matrix). One pass over the seq column: the thread
        window channel reads a few hundred memories per search without a database trip."""
        with self._lock:
            size = self._size
            matrix, all_seqs = self._matrix[:size], self._seqs[:size]
            rows = np.flatnonzero(self._alive[:size] & np.isin(all_seqs, np.asarray(seqs)))
        return best_rows(all_seqs[rows], matrix[rows], query)

    # -- internals --------------------------------------------------------------------------

    def _reset(self, capacity: int) -> None:
        """Start over in fresh arrays (a search may still be reading the old ones), sized
        for `capacity` rows so that loading never has to grow them."""
        self._matrix = np.zeros((capacity, self.embedder.dims), dtype=np.float32)
        self._seqs = np.zeros(capacity, dtype=np.int64)
        self._scopes = np.zeros(capacity, dtype=np.int32)
        self._kinds = np.zeros(capacity, dtype=np.int32)
        self._alive = np.zeros(capacity, dtype=bool)
        self._size = 0
        self._position = {}

    def _kill(self, rowid: int) -> None:
        position = self._position.pop(rowid, None)
        if position is not None:
            self._alive[position] = False

    def _append(self, rows: Sequence[VectorRow]) -> None:
        if not rows:
            return
        self._reserve(self._size + len(rows))
        start = self._size
        block = np.frombuffer(b"".join(row[4] for row in rows), dtype=np.float32)
        self._matrix[start : start + len(rows)] = block.reshape(len(rows), self.embedder.dims)
        for offset, (rowid, scope, kind, seq, _) in enumerate(rows):
            position = start + offset
            self._kill(rowid)
            self._position[rowid] = position
            self._seqs[position] = seq
            self._scopes[position] = self._code(self._scope_codes, scope)
            self._kinds[position] = self._code(self._kind_codes, kind)
            self._alive[position] = True
        self._size += len(rows)

    def _reserve(self, needed: int) -> None:
        capacity = len(self._seqs)
        if needed <= capacity:
            return
        while capacity < needed:
            capacity = capacity * 3 // 2 + LOAD_HEADROOM
        self._matrix = _grow(self._matrix, capacity)
        self._seqs = _grow(self._seqs, capacity)
        self._scopes = _grow(self._scopes, capacity)
        self._kinds = _grow(self._kinds, capacity)
        self._alive = _grow(self._alive, capacity)

    @staticmethod
    def _code(codes: dict[str, int], value: str) -> int:
        return codes.setdefault(value, len(codes))

    @staticmethod
    def _codes(codes: dict[str, int], values: Sequence[str]) -> np.ndarray:
        return np.array([codes[v] for v in values if v in codes], dtype=np.int32)


def dot_rows(matrix: np.ndarray, vector: np.ndarray) -> np.ndarray:
    """Each row's dot product with `vector`, in numpy's own loop on the calling thread.

    Not `matrix @ vector`: that is OpenBLAS's sgemv, which wakes its thread pool on every
    call above a few thousand rows. On a machine whose cores are busy, waiting for those
    threads cost about 12 ms a search even for a conversation's 1,400 vectors; and a
    matrix-vector product is bound by memory, not arithmetic, so the threads bought nothing
    at 100,000 rows either (measured: 24 ms threaded, 12 ms here)."""
    return np.einsum("ij,j->i", matrix, vector, optimize=False)


def best_rows(
    seqs: np.ndarray, vectors: np.ndarray, query: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Rows `vectors` labelled by `seqs` (several rows per seq: a memory's chunks): the seqs
    ascending, and for each its row nearest `query` (the first of equals)."""
    if not len(seqs):
        return seqs, vectors
    similarity = dot_rows(vectors, query.astype(np.float32))
    order = np.lexsort((-similarity, seqs))
    unique, first = np.unique(seqs[order], return_index=True)
    return unique, vectors[order[first]]


def _grow(array: np.ndarray, capacity: int) -> np.ndarray:
    grown = np.zeros((capacity, *array.shape[1:]), dtype=array.dtype)
    grown[: len(array)] = array
    return grown
