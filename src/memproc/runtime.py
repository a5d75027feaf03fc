"""Long-lived state shared by every request: configuration, scope policy and the store.

The store is opened at start-up, but a failure to open it does not stop the process: the
harness gets typed `storage_unavailable` errors instead of a dead pipe, and each later request
tries to open it again, so an operator's fix takes effect without a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, Protocol

from memproc.config import Config
from memproc.errors import MemprocError, StorageUnavailable
from memproc.models.manager import ModelManager
from memproc.scopes import ScopePolicy

if TYPE_CHECKING:  # imported when first used, so that answering `ping` does not pay for them
    from memproc.retrieval.dense_cache import DenseCache
    from memproc.retrieval.indexing import VectorIndex
    from memproc.store import Store
    from memproc.store.vectors import EmbedderRow
    from memproc.wire.messages import ProgressParams

log = logging.getLogger("memproc.runtime")


class ProgressSink(Protocol):
    """Where a background task reports how far it has got: the client's stream when serving
    (a `notifications/progress` line, which only the server knows how to write), stderr for
    `memproc index rebuild`. Given to `start` or `backfill`, never set on the runtime from
    outside."""

    def progress(self, params: ProgressParams) -> None: ...


class Runtime:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.scopes = ScopePolicy(config.project, config.scopes)
        self._store: Store | None = None
        self._store_error: MemprocError | None = None
        self._store_lock = threading.Lock()
        self.models = ModelManager(
            config.models_dir, config.embedder, config.reranker, config.model_threads
        )
        # Where background backfills report progress: given by whoever starts the runtime.
        self._progress: ProgressSink | None = None
        self._index: VectorIndex | None = None
        self._dense_caches: dict[int, DenseCache] = {}
        self._closing = threading.Event()
        self._background_threads: list[threading.Thread] = []
        # One backfill at a time; a request while it runs asks it for another pass.
        self._backfill_running = False
        self._backfill_again = False

    def open_store(self) -> None:
        """Try to open the store now; remember why if it fails."""
        from memproc.store import Store
        from memproc.store.connection import ConnectionSettings

        with self._store_lock:
            if self._store is not None:
                return
            settings = ConnectionSettings(
                busy_timeout_ms=self.config.busy_timeout_ms,
                synchronous=self.config.synchronous,
            )
            try:
                self._store = Store(self.config.db, settings)
                self._store_error = None
            except MemprocError as exc:
                self._store_error = exc
                log.error("store unavailable", extra={"reason": exc.data.get("reason")})

    def store(self) -> Store:
        if self._store is None:
            self.open_store()
        if self._store is None:
            error = self._store_error
            if error is not None:
                raise error
            raise StorageUnavailable("storage unavailable", reason="not_open")
        return self._store

    def vector_index(self, wait_s: float, *, required: bool) -> VectorIndex | None:
        """The current embedder's vector index, or None without an embedder.

        `required=False` (writes) never waits and treats a loading or failed embedder as
        absent: the backfill embeds those memories later. `required=True` (searches) waits up
        to `wait_s` and lets NotReady reach the caller.
        """
        try:
            embedder = self.models.get("embedder", wait_s)
        except MemprocError:
            if required:
                raise
            return None
        if embedder is None:
            return None
        from memproc.retrieval.indexing import VectorIndex

        store = self.store()
        with self._store_lock:
            if self._index is None or self._index.embedder is not embedder:
                self._index = VectorIndex(store, embedder)
            return self._index

    def start(self, progress: ProgressSink | None = None) -> None:
        """Open the store and load the models in the background, once the transport answers:
        `ping` and `initialize` need neither, and a request that needs the store opens it
        itself (under the same lock) if it comes first. Background backfills report to
        `progress`."""
        self._progress = progress
        self._in_background(self.open_store, "memproc-open")
        self.start_models()

    def start_models(self) -> None:
        """Load models in the background; when the embedder is ready, backfill vectors."""
        self.models.on_ready(self._on_model_ready)
        self.models.start()

    def _on_model_ready(self, kind: str, model: Any) -> None:
        if kind == "embedder":
            self.request_backfill()

    def wrote_without_vectors(self) -> None:
        """A write stored memories without vectors: no embedder was ready when it began.

        Why this is not enough to leave to the backfill that readiness starts: that backfill
        may count the pending memories before this write commits, and then it would stay
        unsearchable by meaning until the next start. Called after the commit, so if the
        embedder is ready now, one more pass is sure to see the write.
        """
        if self.vector_index(0.0, required=False) is not None:
            self.request_backfill()

    def request_backfill(self) -> None:
        """Start a backfill on a background thread, or, if one runs, have it pass again."""
        with self._store_lock:
            if self._backfill_running:
                self._backfill_again = True
                return
            self._backfill_running = True
        self._in_background(self._backfill_until_caught_up, "memproc-backfill")

    def _backfill_until_caught_up(self) -> None:
        try:
            while not self._closing.is_set():
                self.backfill(self._progress)
                with self._store_lock:  # a request now either sees running or is seen here
                    if not self._backfill_again:
                        self._backfill_running = False
                        return
                    self._backfill_again = False
        finally:
            with self._store_lock:
                self._backfill_running = False

    def backfill(self, progress: ProgressSink | None = None) -> int:
        """Embed memories that lack vectors for the current embedder, reporting progress to
        `progress`. Failures are logged: a backfill is retried next start."""
        try:
            index = self.vector_index(0.0, required=False)
            if index is None:
                return 0

            report = None if progress is None else _reporter(progress, index.embedder.name)
            done = index.backfill(report, should_stop=self._closing.is_set)
            self.warm_dense_cache(index.row())
            return done
        except MemprocError as exc:
            log.warning("backfill stopped", extra={"kind": exc.kind})
            return 0

    def dense_cache(self, row: EmbedderRow) -> DenseCache:
        """This process's in-memory copy of an embedder's vectors (maybe not loaded yet: then
        one load starts in the background and searches use sqlite-vec meanwhile)."""
        from memproc.retrieval.dense_cache import DenseCache

        with self._store_lock:
            cache = self._dense_caches.get(row.id)
            if cache is None:
                cache = self._dense_caches[row.id] = DenseCache(row)
        if not cache.loaded and not cache.loading and not cache.too_large:
            self._in_background(lambda: self.warm_dense_cache(row), "memproc-dense")
        return cache

    def _in_background(self, work: Callable[[], object], name: str) -> None:
        """Run store work on a daemon thread that close() waits for. Checked and started
        under the lock, so close() never sees a thread it cannot join (not started yet) and
        none starts once it has looked."""
        with self._store_lock:
            if self._closing.is_set():
                return
            thread = threading.Thread(target=work, name=name, daemon=True)
            thread.start()
            self._background_threads = [t for t in self._background_threads if t.is_alive()]
            self._background_threads.append(thread)

    def warm_dense_cache(self, row: EmbedderRow) -> None:
        """Load the in-memory copy unless it is loaded or another thread is loading it."""
        from memproc.retrieval.dense_cache import DenseCache

        with self._store_lock:
            cache = self._dense_caches.setdefault(row.id, DenseCache(row))
        if cache.loaded or not cache.claim_loading():
            return
        try:
            with self.store().reading() as conn:
                limit = self.config.dense_copy_max_rows
                loaded = cache.load(conn, limit, should_stop=self._closing.is_set)
                if not loaded and not self._closing.is_set():
                    cache.too_large = True
                    log.info("too many vectors for the in-memory copy; using sqlite-vec")
        except MemprocError as exc:
            log.warning("dense cache not loaded", extra={"kind": exc.kind})
        finally:
            cache.release_loading()

    def store_state(self) -> tuple[Literal["loading", "ready", "failed"], str | None]:
        if self._store is not None:
            try:
                self._store.check_path()
            except MemprocError as exc:
                return "failed", exc.data.get("reason")
            return "ready", "read_only" if self._store.read_only else None
        if self._store_error is None:
            return "loading", None  # start() is opening it in the background
        return "failed", self._store_error.data.get("reason")

    def stop_background(self, wait_s: float = 30.0) -> bool:
        """Ask background work to stop (it checks between batches) and wait for it and for a
        model load in progress; False if some is still running after `wait_s`."""
        with self._store_lock:  # with _in_background's check: no thread starts after this
            self._closing.set()
            threads = list(self._background_threads)
        deadline = time.monotonic() + wait_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        loaded = self.models.join(max(0.0, deadline - time.monotonic()))
        return loaded and not any(thread.is_alive() for thread in threads)

    def close(self, wait_s: float = 30.0) -> bool:
        """Stop background work, then close the store: closing a connection another thread is
        reading through would fail in that thread. False if background work is still running
        (the store is then left open)."""
        if not self.stop_background(wait_s):
            log.warning("background work still running at close; leaving the store open")
            return False
        with self._store_lock:
            if self._store is not None:
                self._store.close()
                self._store = None
        return True


def _reporter(sink: ProgressSink, embedder: str) -> Callable[[int, int], None]:
    """The backfill's (done, total) counts as `notifications/progress` params for `sink`."""
    from memproc.wire.messages import ProgressParams

    def report(done: int, total: int) -> None:
        sink.progress(ProgressParams(task="backfill", embedder=embedder, done=done, total=total))

    return report
