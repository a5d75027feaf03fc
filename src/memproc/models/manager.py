"""Which models the service uses, loaded on a background thread so start-up never waits.

Each kind (embedder, reranker) has one slot whose state is absent (nothing to load), loading,
ready or failed (with a reason). A request that needs a model waits for its slot to settle, up
to a deadline, and then gets `not_ready`: retryable while loading, not retryable once failed.
"""

from __future__ import annotations

import logging
import os
import shlex
import threading
import time
from collections.abc import Callable
from typing import Any

from memproc.errors import NotReady
from memproc.models.manifest import ModelError, ModelKind, read_manifest

log = logging.getLogger("memproc.models")

# "auto" prefers these, in order, among the installed models of each kind.
PREFERRED: dict[str, tuple[str, ...]] = {
    "embedder": ("bge-small-en-v1.5", "minilm-l6-int8"),
    "reranker": ("bge-reranker-base",),
}


class ModelSlot:
    def __init__(
        self,
        kind: ModelKind,
        name: str | None,
        reason: str | None = None,
        missing_from: str | None = None,
    ) -> None:
        self.kind = kind
        self.name = name
        self.state = "absent" if name is None else "loading"
        self.reason = reason
        # The models directory an embedder is missing from, when `auto` found none there.
        self.missing_from = missing_from
        self.model: Any = None
        self.load_seconds: float | None = None
        self.settled = threading.Event()
        if name is None:
            self.settled.set()

    @property
    def fix(self) -> str | None:
        """The one command that supplies a missing embedder. Built when asked for: the
        catalog that names the default model is large, and `ping` should not wait for it."""
        if self.missing_from is None:
            return None
        from memproc.models.catalog import DEFAULT_EMBEDDER

        directory = shlex.quote(self.missing_from)
        return f"memproc models pull {DEFAULT_EMBEDDER} --models-dir {directory}"

    def describe(self) -> dict[str, Any]:
        detail: dict[str, Any] = {}
        if self.name is not None:
            detail["name"] = self.name
        if self.load_seconds is not None:
            detail["load_seconds"] = round(self.load_seconds, 3)
        described = {"state": self.state, "reason": self.reason, "detail": detail}
        fix = self.fix
        return described if fix is None else {**described, "fix": fix}


def default_threads() -> int:
    """Inference threads when `model_threads` is 0: the cores, up to four (more rarely pays
    for one sentence at a time)."""
    return min(4, os.cpu_count() or 1)


class ModelManager:
    def __init__(self, models_dir: str, embedder: str, reranker: str, threads: int = 0) -> None:
        self.models_dir = models_dir
        self.threads = threads or default_threads()
        self.slots: dict[str, ModelSlot] = {
            "embedder": self._slot("embedder", embedder),
            "reranker": self._slot("reranker", reranker),
        }
        self._ready_callbacks: list[Callable[[str, Any], None]] = []
        self._loader: threading.Thread | None = None

    def _slot(self, kind: ModelKind, requested: str) -> ModelSlot:
        if requested == "none":
            return ModelSlot(kind, None, f"no {kind} configured")
        if requested == "auto":
            name = self._auto_choice(kind)
            if name is None and kind == "embedder":
                return self._missing_embedder()
            return ModelSlot(kind, name, None if name else f"no {kind} installed")
        return ModelSlot(kind, requested)

    def _missing_embedder(self) -> ModelSlot:
        """`auto` with an empty cache: search is lexical only, which a user would not guess,
        so the slot carries the command that fixes it (the service itself never downloads)."""
        reason = f"no embedder installed in {self.models_dir}: search is lexical only"
        return ModelSlot("embedder", None, reason, missing_from=self.models_dir)

    def _auto_choice(self, kind: str) -> str | None:
        installed = self._installed_of_kind(kind)
        for name in PREFERRED[kind]:
            if name in installed:
                return name
        return installed[0] if installed else None

    def _installed_of_kind(self, kind: str) -> list[str]:
        if not os.path.isdir(self.models_dir):
            return []
        names = []
        for name in sorted(os.listdir(self.models_dir)):
            try:
                if read_manifest(os.path.join(self.models_dir, name)).kind == kind:
                    names.append(name)
            except ModelError:
                continue
        return names

    # -- loading -----------------------------------------------------------------------------

    def on_ready(self, callback: Callable[[str, Any], None]) -> None:
        """Call `callback(kind, model)` on the loader thread when a model becomes ready."""
        self._ready_callbacks.append(callback)

    def start(self) -> None:
        """Load in the background, where it is also said once what is missing and how to
        supply it."""
        self._loader = threading.Thread(target=self._start, name="memproc-models", daemon=True)
        self._loader.start()

    def _start(self) -> None:
        fix = self.slots["embedder"].fix
        if fix is not None:
            log.warning(f"{self.slots['embedder'].reason}; to fix: {fix}", extra={"fix": fix})
        self._load_all()

    def join(self, timeout: float) -> bool:
        """Wait for loading to finish (it cannot be interrupted); False if it is still going.
        The process must not exit under a load in progress: onnxruntime aborts if the
        interpreter is torn down while it builds a session."""
        if self._loader is None:
            return True
        self._loader.join(timeout)
        return not self._loader.is_alive()

    def load_now(self) -> None:
        """Load synchronously (for the CLI and tests)."""
        self._load_all()

    def _load_all(self) -> None:
        for slot in self.slots.values():
            if slot.name is not None and not slot.settled.is_set():
                self._load(slot)

    def _load(self, slot: ModelSlot) -> None:
        from memproc.models.embedder import Embedder
        from memproc.models.reranker import Reranker

        directory = os.path.join(self.models_dir, slot.name or "")
        started = time.perf_counter()
        try:
            if not os.path.isdir(directory):
                raise ModelError("not_installed", f"{slot.name} is not in {self.models_dir}")
            loader = Embedder if slot.kind == "embedder" else Reranker
            model = loader(directory, threads=self.threads)
        except ModelError as exc:
            slot.state, slot.reason = "failed", f"{exc.reason}: {exc}"
            log.error("model failed to load", extra={"kind": slot.kind, "reason": exc.reason})
        except Exception as exc:  # a model must never take the service down
            slot.state, slot.reason = "failed", f"unexpected: {type(exc).__name__}"
            log.exception("model failed to load", extra={"kind": slot.kind})
        else:
            self.install(slot.kind, model, time.perf_counter() - started)
        finally:
            slot.settled.set()

    def install(self, kind: ModelKind, model: Any, load_seconds: float = 0.0) -> None:
        """Put a loaded model in its slot, as the loader does with one it loaded: the slot
        settles, says ready, and the ready-callbacks run (the embedder's starts a backfill).
        `VectorService.install_embedder` is the public way to put an embedder here."""
        slot = self.slots[kind]
        slot.name = slot.name or model.name
        slot.model, slot.reason, slot.load_seconds = model, None, load_seconds
        # Settled first: once the state says ready, get(wait_s=0) must hand the model out,
        # or a write sent on seeing "ready" is stored without vectors.
        slot.settled.set()
        slot.state = "ready"
        log.info("model ready", extra={"kind": kind, "model": slot.name})
        for callback in self._ready_callbacks:
            callback(kind, model)

    # -- use ---------------------------------------------------------------------------------

    def get(self, kind: ModelKind, wait_s: float) -> Any:
        """The ready model, or None when none is configured or installed. Raises NotReady if it
        is still loading after `wait_s` (retryable) or failed to load (not retryable)."""
        slot = self.slots[kind]
        if slot.name is None:
            return None
        if not slot.settled.wait(wait_s):
            raise NotReady(f"the {kind} is still loading", retryable=True, component=kind)
        if slot.state == "failed":
            raise NotReady(
                f"the {kind} failed to load", retryable=False, component=kind, reason=slot.reason
            )
        return slot.model

    def states(self) -> dict[str, dict[str, Any]]:
        return {kind: slot.describe() for kind, slot in self.slots.items()}
