"""ModelManager over real model directories: which model each slot picks, the states it reports,
and what `get()` does while a model loads, after it failed, and when there is none.

Loading is held deterministically where a test needs it: the loader class is replaced by one
that blocks on a threading.Event the test releases. Nothing sleeps.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import memproc.models.embedder
from memproc.errors import NotReady
from memproc.models.embedder import Embedder
from memproc.models.manager import ModelManager
from memproc.models.manifest import ModelError
from memproc.models.reranker import Reranker
from modelkit import build_cross_encoder, copy_model, flip_byte

SETTLE_TIMEOUT = 60.0


@pytest.fixture
def models_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "models"
    directory.mkdir()
    return directory


def link_minilm(models_dir: Path, minilm_dir: Path, name: str = "minilm-l6-int8") -> None:
    """The real model, installed by a symlink (loading reads through it)."""
    (models_dir / name).symlink_to(minilm_dir, target_is_directory=True)


def test_auto_picks_the_installed_embedder_and_loads_it(models_dir: Path, minilm_dir: Path) -> None:
    link_minilm(models_dir, minilm_dir)
    manager = ModelManager(str(models_dir), "auto", "auto", threads=1)
    assert manager.states()["embedder"] == {
        "state": "loading",
        "reason": None,
        "detail": {"name": "minilm-l6-int8"},
    }
    manager.load_now()
    states = manager.states()
    assert states["embedder"]["state"] == "ready"
    assert states["embedder"]["reason"] is None
    assert states["embedder"]["detail"]["name"] == "minilm-l6-int8"
    assert isinstance(states["embedder"]["detail"]["load_seconds"], float)
    assert states["reranker"] == {
        "state": "absent",
        "reason": "no reranker installed",
        "detail": {},
    }
    embedder = manager.get("embedder", wait_s=0)
    assert isinstance(embedder, Embedder)
    assert embedder.embed(["hello"]).shape == (1, 384)
    assert manager.get("reranker", wait_s=0) is None


def test_managers_loading_the_same_model_share_one_session(
    models_dir: Path, minilm_dir: Path, tmp_path: Path
) -> None:
    """Two Runtimes in one process (a benchmark, the index command beside the service) hold
    the model's weights once; a symlinked and a direct path are the same files."""
    link_minilm(models_dir, minilm_dir)
    first = ModelManager(str(models_dir), "auto", "none", threads=1)
    second = ModelManager(str(minilm_dir.parent), "minilm-l6-int8", "none", threads=1)
    first.load_now()
    second.load_now()
    one, two = first.get("embedder", wait_s=0), second.get("embedder", wait_s=0)
    assert one is not two
    assert one._session is two._session


@pytest.mark.slow
def test_auto_picks_a_reranker_too_and_prefers_the_better_embedder(
    models_dir: Path, minilm_dir: Path, tmp_path: Path
) -> None:
    link_minilm(models_dir, minilm_dir)
    copy_model(minilm_dir, models_dir / "bge-small-en-v1.5", name="bge-small-en-v1.5")
    build_cross_encoder(models_dir / "tiny-ce", minilm_dir / "tokenizer.json")
    (models_dir / "not-a-model").mkdir()  # ignored: no manifest
    manager = ModelManager(str(models_dir), "auto", "auto", threads=1)
    manager.load_now()
    assert manager.get("embedder", wait_s=0).name == "bge-small-en-v1.5"
    reranker = manager.get("reranker", wait_s=0)
    assert isinstance(reranker, Reranker)
    assert reranker.name == "tiny-ce"
    assert {kind: s["state"] for kind, s in manager.states().items()} == {
        "embedder": "ready",
        "reranker": "ready",
    }


def test_none_disables_a_slot_even_with_models_installed(
    models_dir: Path, minilm_dir: Path
) -> None:
    link_minilm(models_dir, minilm_dir)
    manager = ModelManager(str(models_dir), "none", "none")
    manager.load_now()
    assert manager.states() == {
        "embedder": {"state": "absent", "reason": "no embedder configured", "detail": {}},
        "reranker": {"state": "absent", "reason": "no reranker configured", "detail": {}},
    }
    assert manager.get("embedder", wait_s=0) is None


@pytest.mark.parametrize("exists", [True, False])
def test_auto_with_nothing_installed_is_absent(tmp_path: Path, exists: bool) -> None:
    directory = tmp_path / "models"
    if exists:
        directory.mkdir()
    manager = ModelManager(str(directory), "auto", "auto")
    manager.load_now()
    assert manager.states()["embedder"] == {
        "state": "absent",
        "reason": f"no embedder installed in {directory}: search is lexical only",
        "detail": {},
        "fix": f"memproc models pull minilm-l6-int8 --models-dir {directory}",
    }
    assert manager.get("embedder", wait_s=0) is None


def test_a_named_model_that_is_not_installed_fails_not_retryable(
    models_dir: Path, minilm_dir: Path
) -> None:
    link_minilm(models_dir, minilm_dir)
    manager = ModelManager(str(models_dir), "bge-small-en-v1.5", "none")
    manager.load_now()
    state = manager.states()["embedder"]
    assert state["state"] == "failed"
    assert state["reason"].startswith("not_installed:")
    assert state["detail"] == {"name": "bge-small-en-v1.5"}
    with pytest.raises(NotReady) as caught:
        manager.get("embedder", wait_s=0)
    assert caught.value.is_retryable() is False
    assert caught.value.data["component"] == "embedder"
    assert caught.value.data["reason"].startswith("not_installed:")


def test_a_corrupted_model_fails_with_hash_mismatch(models_dir: Path, minilm_dir: Path) -> None:
    copy = copy_model(minilm_dir, models_dir / "minilm-l6-int8")
    flip_byte(copy / "model.onnx")
    manager = ModelManager(str(models_dir), "auto", "none")
    manager.load_now()
    state = manager.states()["embedder"]
    assert state["state"] == "failed"
    assert state["reason"].startswith("hash_mismatch:")
    with pytest.raises(NotReady) as caught:
        manager.get("embedder", wait_s=0)
    assert caught.value.is_retryable() is False


def test_the_named_model_of_the_wrong_kind_fails(models_dir: Path, minilm_dir: Path) -> None:
    link_minilm(models_dir, minilm_dir)
    manager = ModelManager(str(models_dir), "none", "minilm-l6-int8")
    manager.load_now()
    assert manager.states()["reranker"]["reason"].startswith("wrong_kind:")


# -- loading held open -----------------------------------------------------------------------


class Gate:
    """A loader stand-in that blocks until released, then returns or raises."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = threading.Event()
        self.error: BaseException | None = None
        self.built: list[Any] = []

    def loader(self, directory: str, threads: int = 1) -> Any:
        self.entered.set()
        if not self.release.wait(SETTLE_TIMEOUT):
            raise RuntimeError("the test never released the loader")
        if self.error is not None:
            raise self.error
        model = object()
        self.built.append((directory, threads, model))
        return model


@pytest.fixture
def gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gate]:
    held = Gate()
    monkeypatch.setattr(memproc.models.embedder, "Embedder", held.loader)
    try:
        yield held
    finally:
        held.release.set()  # never leave a loader thread blocked


def started(models_dir: Path, minilm_dir: Path) -> tuple[ModelManager, list[Any], threading.Event]:
    """A manager loading MiniLM on its background thread, with an on_ready recorder."""
    link_minilm(models_dir, minilm_dir)
    manager = ModelManager(str(models_dir), "auto", "none", threads=3)
    ready: list[Any] = []
    fired = threading.Event()

    def on_ready(kind: str, model: Any) -> None:
        ready.append((kind, model))
        fired.set()

    manager.on_ready(on_ready)
    manager.start()
    return manager, ready, fired


def test_get_while_loading_is_retryable_not_ready_then_the_model(
    models_dir: Path, minilm_dir: Path, gate: Gate
) -> None:
    manager, ready, fired = started(models_dir, minilm_dir)
    assert gate.entered.wait(SETTLE_TIMEOUT)
    with pytest.raises(NotReady) as caught:
        manager.get("embedder", wait_s=0.01)
    assert caught.value.is_retryable() is True
    assert caught.value.data == {"component": "embedder"}
    assert manager.states()["embedder"]["state"] == "loading"
    assert ready == []
    gate.release.set()
    assert fired.wait(SETTLE_TIMEOUT)
    ((directory, threads, model),) = gate.built
    assert (directory, threads) == (str(models_dir / "minilm-l6-int8"), 3)
    assert ready == [("embedder", model)]
    assert manager.get("embedder", wait_s=0) is model
    assert manager.states()["embedder"]["state"] == "ready"


def test_get_waits_for_a_load_that_settles_within_the_deadline(
    models_dir: Path, minilm_dir: Path, gate: Gate
) -> None:
    manager, _, _ = started(models_dir, minilm_dir)
    assert gate.entered.wait(SETTLE_TIMEOUT)
    result: list[Any] = []
    waiter = threading.Thread(
        target=lambda: result.append(manager.get("embedder", wait_s=SETTLE_TIMEOUT))
    )
    waiter.start()
    gate.release.set()
    waiter.join(SETTLE_TIMEOUT)
    assert not waiter.is_alive()
    assert result == [gate.built[0][2]]


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (ModelError("invalid_model", "cannot load"), "invalid_model: cannot load"),
        (RuntimeError("boom"), "unexpected: RuntimeError"),
    ],
)
def test_a_load_that_raises_fails_without_firing_on_ready(
    models_dir: Path, minilm_dir: Path, gate: Gate, error: BaseException, reason: str
) -> None:
    manager, ready, _ = started(models_dir, minilm_dir)
    gate.error = error
    gate.release.set()
    assert manager.slots["embedder"].settled.wait(SETTLE_TIMEOUT)
    with pytest.raises(NotReady) as caught:
        manager.get("embedder", wait_s=0)
    assert caught.value.is_retryable() is False
    assert caught.value.data == {"component": "embedder", "reason": reason}
    assert manager.states()["embedder"] == {
        "state": "failed",
        "reason": reason,
        "detail": {"name": "minilm-l6-int8"},
    }
    assert ready == []


def test_the_model_is_handed_out_before_the_state_says_ready(
    models_dir: Path, minilm_dir: Path
) -> None:
    """A client that sees `ready` in server.info and then writes must get vectors: a write asks
    get(wait_s=0), so there must be no moment when the state says ready and get() still says
    loading (such a write was stored without vectors, after the backfill had already looked).
    The "model ready" log line is emitted right after the state changes: probe there."""
    link_minilm(models_dir, minilm_dir)
    manager = ModelManager(str(models_dir), "auto", "none", threads=1)
    seen: list[tuple[str, str]] = []

    class AtReady(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage() == "model ready":
                state = manager.states()["embedder"]["state"]
                try:
                    manager.get("embedder", wait_s=0)
                    seen.append((state, "handed out"))
                except NotReady:
                    seen.append((state, "not ready"))

    logger = logging.getLogger("memproc.models")
    probe, level = AtReady(), logger.level
    logger.addHandler(probe)
    logger.setLevel(logging.INFO)
    try:
        manager.load_now()
    finally:
        logger.removeHandler(probe)
        logger.setLevel(level)
    assert seen == [("ready", "handed out")]


def test_an_installed_model_is_ready_as_a_loaded_one_is(
    models_dir: Path, kept_minilm: Embedder
) -> None:
    """`install` is the loader's last step, public: a benchmark hands one loaded model to the
    runtimes of many stores, and each sees it ready and starts its backfill."""
    manager = ModelManager(str(models_dir), "minilm-l6-int8", "none", threads=1)
    readied: list[tuple[str, Any]] = []
    manager.on_ready(lambda kind, model: readied.append((kind, model)))
    assert manager.states()["embedder"]["state"] == "loading"
    manager.install("embedder", kept_minilm)
    assert manager.get("embedder", wait_s=0) is kept_minilm
    assert manager.states()["embedder"] == {
        "state": "ready",
        "reason": None,
        "detail": {"name": "minilm-l6-int8", "load_seconds": 0.0},
    }
    assert readied == [("embedder", kept_minilm)]


def test_a_models_session_runs_on_its_own_feeds(kept_minilm: Embedder) -> None:
    """What a benchmark's floor times: tokenizing and one onnxruntime call, nothing else."""
    feeds = kept_minilm.feeds(["hello world"])
    assert set(feeds) == {node.name for node in kept_minilm.session.get_inputs()}
    assert kept_minilm.session.run(None, feeds)[0].shape[0] == 1
