"""The vector service: the current embedder's index, the in-memory dense copies, the
backfill and the deferred embedding of single writes, with their locks, flags and background
threads.

Why one class: these share the answer to "which embedder are vectors made with now", and each
starts work that shutdown must wait for. Held on the runtime, they made it a second retrieval
layer that ops, benchmarks and tests reached into; here the runtime only wires the service to
its store, its models and the progress sink the transport gives it. Like the rest of
retrieval, it knows neither the wire nor the server: progress leaves as plain counts.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from memproc.errors import MemprocError

if TYPE_CHECKING:  # imported when first used, so that answering `ping` does not pay for them
    from memproc.background import BackgroundWork
    from memproc.models.embedder import Embedder
    from memproc.models.manager import ModelManager
    from memproc.retrieval.dense_cache import DenseCache
    from memproc.retrieval.indexing import VectorIndex
    from memproc.store.storage import Storage
    from memproc.store.vectors import EmbedderRow

log = logging.getLogger("memproc.vectors")

# How far a backfill has got: (embedder name, memories done, memories pending in all).
BackfillProgress = Callable[[str, int, int], None]


class VectorService:
    def __init__(
        self,
        models: ModelManager,
        store: Callable[[], Storage],
        background: BackgroundWork,
        dense_copy_max_rows: int,
        model_wait_s: float = 5.0,
    ) -> None:
        self._models = models
        # How long the deferred worker waits for an embedder still loading.
        self._model_wait_s = model_wait_s
        self._store = store
        self._background = background
        self._dense_copy_max_rows = dense_copy_max_rows
        self._lock = threading.Lock()
        self._index: VectorIndex | None = None
        self._dense_caches: dict[int, DenseCache] = {}
        # Where background backfills report: given by whoever starts the runtime.
        self._progress: BackfillProgress | None = None
        # One backfill at a time; a request while it runs asks it for another pass.
        self._backfill_running = False
        self._backfill_again = False
        # Deferred embedding (see `embed_later`): writes handed over, writes whose vectors
        # are written, the lowest memory seq not yet taken by the worker (minus one), and
        # whether the worker thread runs. Under their own condition: searches wait on it.
        self._deferred = threading.Condition(threading.Lock())
        self._deferred_requested = 0
        self._deferred_done = 0
        self._deferred_after: int | None = None
        # Older memories whose thread window a write changed: taken by seq, not as a range.
        self._deferred_seqs: set[int] = set()
        self._deferred_running = False

    def report_backfills_to(self, progress: BackfillProgress | None) -> None:
        """Where the backfills started in the background report (the transport's sink, which
        the runtime is given at start)."""
        self._progress = progress

    def install_embedder(self, embedder: Embedder, load_seconds: float = 0.0) -> None:
        """Make a loaded embedder the one vectors are made with. It goes into the models'
        slot, as the loader puts one it loaded, because that slot is what `vector_index`
        waits on and what `status` reports; the slot's ready-callbacks then run (once the
        runtime has started its models, `on_model_ready` starts a backfill). A benchmark
        shares one loaded model among the runtimes of many stores this way."""
        self._models.install("embedder", embedder, load_seconds)

    def on_model_ready(self, kind: str, model: Any) -> None:
        """The models' ready-callback: a new embedder means memories may lack its vectors."""
        if kind == "embedder":
            self.request_backfill()

    def vector_index(self, wait_s: float, *, required: bool) -> VectorIndex | None:
        """The current embedder's vector index, or None without an embedder.

        `required=False` (writes) never waits and treats a loading or failed embedder as
        absent: the backfill embeds those memories later. `required=True` (searches) waits up
        to `wait_s` and lets NotReady reach the caller.
        """
        try:
            embedder = self._models.get("embedder", wait_s)
        except MemprocError:
            if required:
                raise
            return None
        if embedder is None:
            return None
        from memproc.retrieval.indexing import VectorIndex

        store = self._store()
        with self._lock:
            if self._index is None or self._index.embedder is not embedder:
                self._index = VectorIndex(store, embedder)
            return self._index

    def wrote_without_vectors(self) -> None:
        """A write stored memories without vectors: no embedder was ready when it began.

        Why this is not enough to leave to the backfill that readiness starts: that backfill
        may count the pending memories before this write commits, and then it would stay
        unsearchable by meaning until the next start. Called after the commit, so if the
        embedder is ready now, one more pass is sure to see the write.
        """
        if self.vector_index(0.0, required=False) is not None:
            self.request_backfill()

    def embedder_loading(self) -> bool:
        """An embedder is configured and still loading: memories written now get their
        vectors once it is ready, and searches should wait for them."""
        return self._models.slots["embedder"].state == "loading"

    def embed_later(self, seqs: list[int], rewindowed: Sequence[int] = ()) -> None:
        """Have the worker embed memories a write committed without vectors (call after the
        commit).

        Why: a single `memory.remember` spent most of its time in inference. The row is
        durable and answered once committed; its vectors are derived data, computed here on
        one worker thread that takes whatever has queued since its last pass as one batch.
        A caller storing one memory at a time is answered at the cost of a commit, and the
        model runs in batches on the other core meanwhile. Searches wait for the vectors of
        the writes answered before them (`caught_up`); if the process stops first, the
        backfill of the next start embeds what is left.

        `rewindowed`: memories whose thread window the write changed (see store/threads.py).
        They may lie anywhere in the store, so they are looked up by seq, not as a range.
        """
        if not seqs and not rewindowed:
            return
        with self._deferred:
            self._deferred_requested += 1
            if seqs:
                low = min(seqs) - 1
                after = self._deferred_after
                self._deferred_after = low if after is None else min(after, low)
            self._deferred_seqs.update(rewindowed)
            if self._deferred_running:
                return
            self._deferred_running = True
        if not self._background.run(self._embed_deferred, "memproc-embed"):
            with self._deferred:  # stopping: the next start's backfill embeds them
                self._deferred_running = False
                self._deferred.notify_all()

    def caught_up(self, wait_s: float) -> bool:
        """Wait up to `wait_s` until the vectors of every write handed to `embed_later` before
        this call are written; False if some are still being computed then."""
        deadline = time.monotonic() + wait_s
        with self._deferred:
            target = self._deferred_requested
            while self._deferred_done < target and self._deferred_running:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._deferred.wait(remaining)
            return self._deferred_done >= target

    def _embed_deferred(self) -> None:
        """The worker: one pass per batch of requests, until none is left. It says it has
        stopped in the same locked step that finds nothing left, so a request made just then
        either is seen here or starts the next worker."""
        done_normally = False
        try:
            while not self._background.stopping():
                with self._deferred:
                    target, after = self._deferred_requested, self._deferred_after
                    rewindowed = sorted(self._deferred_seqs)
                    self._deferred_after = None
                    self._deferred_seqs = set()
                    if after is None and not rewindowed:
                        self._deferred_running = False
                        self._deferred.notify_all()
                        done_normally = True
                        return
                self._embed_after(after, rewindowed)
                with self._deferred:
                    self._deferred_done = target
                    self._deferred.notify_all()
        finally:
            if not done_normally:  # stopping, or a failure: nothing runs the queue now
                with self._deferred:
                    self._deferred_running = False
                    self._deferred.notify_all()

    def _embed_after(self, after_seq: int | None, rewindowed: Sequence[int] = ()) -> None:
        """Embed what lacks vectors past `after_seq` and among `rewindowed`, waiting for an
        embedder still loading (a write during start-up hands its memories here too). A
        failure, or a model that is not ready in time, is logged and the waiting searches
        released: those memories are found by words until a backfill embeds them."""
        try:
            index = self.vector_index(self._model_wait_s, required=True)
            if index is not None:
                if after_seq is not None:
                    index.embed_pending_after(after_seq, should_stop=self._background.stopping)
                if rewindowed and not self._background.stopping():
                    index.embed_pending_among(rewindowed)
        except MemprocError as exc:
            log.warning("deferred embedding stopped", extra={"kind": exc.kind})

    def request_backfill(self) -> None:
        """Start a backfill on a background thread, or, if one runs, have it pass again."""
        with self._lock:
            if self._backfill_running:
                self._backfill_again = True
                return
            self._backfill_running = True
        self._background.run(self._backfill_until_caught_up, "memproc-backfill")

    def _backfill_until_caught_up(self) -> None:
        done_normally = False
        try:
            while not self._background.stopping():
                self.backfill(self._progress)
                with self._lock:  # a request now either sees running or is seen here
                    if not self._backfill_again:
                        self._backfill_running = False
                        done_normally = True
                        return
                    self._backfill_again = False
        finally:
            if not done_normally:  # a later backfill may run by now: its flag is its own
                with self._lock:
                    self._backfill_running = False

    def backfill(self, progress: BackfillProgress | None = None) -> int:
        """Embed memories that lack vectors for the current embedder, reporting progress to
        `progress`. Failures are logged: a backfill is retried next start."""
        try:
            index = self.vector_index(0.0, required=False)
            if index is None:
                return 0
            name = index.embedder.name
            report = None if progress is None else lambda done, total: progress(name, done, total)
            done = index.backfill(report, should_stop=self._background.stopping)
            self.warm_dense_cache(index.row())
            return done
        except MemprocError as exc:
            log.warning("backfill stopped", extra={"kind": exc.kind})
            return 0

    def dense_cache(self, row: EmbedderRow) -> DenseCache:
        """This process's in-memory copy of an embedder's vectors (maybe not loaded yet: then
        one load starts in the background and searches use sqlite-vec meanwhile)."""
        from memproc.retrieval.dense_cache import DenseCache

        with self._lock:
            cache = self._dense_caches.get(row.id)
            if cache is None:
                cache = self._dense_caches[row.id] = DenseCache(row)
        if not cache.loaded and not cache.loading and not cache.too_large:
            self._background.run(lambda: self.warm_dense_cache(row), "memproc-dense")
        return cache

    def warm_dense_cache(self, row: EmbedderRow) -> None:
        """Load the in-memory copy unless it is loaded or another thread is loading it."""
        from memproc.retrieval.dense_cache import DenseCache

        with self._lock:
            cache = self._dense_caches.setdefault(row.id, DenseCache(row))
        if cache.loaded or not cache.claim_loading():
            return
        try:
            with self._store().reading() as conn:
                stopping = self._background.stopping
                loaded = cache.load(conn, self._dense_copy_max_rows, should_stop=stopping)
                if not loaded and not stopping():
                    cache.too_large = True
                    log.info("too many vectors for the in-memory copy; using sqlite-vec")
        except MemprocError as exc:
            log.warning("dense cache not loaded", extra={"kind": exc.kind})
        finally:
            cache.release_loading()
