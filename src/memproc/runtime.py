"""Long-lived state shared by every request: configuration, scope policy, the store, the
models and the vector service (`runtime.vectors`, which owns the index, the dense copies and
the backfill). The runtime wires these together and owns start-up and shutdown order.

The store is opened at start-up, but a failure to open it does not stop the process: the
harness gets typed `storage_unavailable` errors instead of a dead pipe, and each later request
tries to open it again, so an operator's fix takes effect without a restart.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Literal, Protocol

from memproc.background import BackgroundWork
from memproc.config import Config
from memproc.errors import MemprocError, StorageUnavailable
from memproc.models.manager import ModelManager
from memproc.retrieval.vectors import BackfillProgress, VectorService
from memproc.scopes import ScopePolicy

if TYPE_CHECKING:  # imported when first used, so that answering `ping` does not pay for them
    from memproc.store.storage import Storage
    from memproc.wire.messages import ProgressParams

log = logging.getLogger("memproc.runtime")


class ProgressSink(Protocol):
    """Where a background task reports how far it has got: the client's stream when serving
    (a `notifications/progress` line, which only the server knows how to write), stderr for
    `memproc index rebuild`. Given to `start` (or, through `backfill_progress`, to
    `vectors.backfill`), never set on the runtime from outside."""

    def progress(self, params: ProgressParams) -> None: ...


class Runtime:
    def __init__(self, config: Config) -> None:
        self.config = config
        self.scopes = ScopePolicy(config.project, config.scopes)
        self._store: Storage | None = None
        self._store_error: MemprocError | None = None
        self._store_lock = threading.Lock()
        self._closed = False  # closed for good: a late caller must not open the store again
        self.models = ModelManager(
            config.models_dir, config.embedder, config.reranker, config.model_threads
        )
        # Threads close() waits for: the store opener's and the vector service's.
        self._background = BackgroundWork()
        self.vectors = VectorService(
            self.models,
            self.store,
            self._background,
            config.dense_copy_max_rows,
            model_wait_s=config.model_wait_s,
        )

    def open_store(self) -> None:
        """Try to open the store now; remember why if it fails."""
        from memproc.store import open_store

        with self._store_lock:
            if self._store is not None or self._closed:
                return
            try:
                self._store = open_store(self.config)
                self._store_error = None
            except MemprocError as exc:
                self._store_error = exc
                log.error("store unavailable", extra={"reason": exc.data.get("reason")})

    def store(self) -> Storage:
        if self._store is None:
            self.open_store()
        if self._store is None:
            error = self._store_error
            if error is not None and not self._closed:
                raise error
            reason = "closed" if self._closed else "not_open"
            raise StorageUnavailable("storage unavailable", reason=reason)
        return self._store

    def start(self, progress: ProgressSink | None = None) -> None:
        """Open the store and load the models in the background, once the transport answers:
        `ping` and `initialize` need neither, and a request that needs the store opens it
        itself (under the same lock) if it comes first. Background backfills report to
        `progress`."""
        self.vectors.report_backfills_to(None if progress is None else backfill_progress(progress))
        self._background.run(self.open_store, "memproc-open")
        self.start_models()

    def start_models(self) -> None:
        """Load models in the background; when the embedder is ready, the vector service
        backfills its vectors."""
        self.models.on_ready(self.vectors.on_model_ready)
        self.models.start()

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
        """Ask background work (the store opener, the vector service's backfills and dense
        copy loads) to stop, as it checks between batches, and wait for it and for a model
        load in progress; False if some is still running after `wait_s`."""
        deadline = time.monotonic() + wait_s
        stopped = self._background.stop(deadline)
        loaded = self.models.join(max(0.0, deadline - time.monotonic()))
        return loaded and stopped

    def close(self, wait_s: float = 30.0) -> bool:
        """Stop background work, then close the store: closing a connection another thread is
        reading through would fail in that thread. False if background work is still running
        (the store is then left open)."""
        if not self.stop_background(wait_s):
            log.warning("background work still running at close; leaving the store open")
            return False
        with self._store_lock:
            self._closed = True
            if self._store is not None:
                self._store.close()
                self._store = None
        return True


def backfill_progress(sink: ProgressSink) -> BackfillProgress:
    """The vector service's backfill counts as `notifications/progress` params for `sink`
    (the service, below the wire, reports plain counts)."""
    from memproc.wire.messages import ProgressParams

    def report(embedder: str, done: int, total: int) -> None:
        sink.progress(ProgressParams(task="backfill", embedder=embedder, done=done, total=total))

    return report
