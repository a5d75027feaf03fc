"""The optimized copy of a model's graph (`optimize.py`): made by `install` and `pull`, pinned in
`memproc-optimized.json`, checked by `models verify` and at load, refused when tampered with,
ignored when stale, and added by `pull` to a directory an older memproc built. Everything
runs the real MiniLM and onnxruntime."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import msgspec
import numpy as np
import onnxruntime as ort
import pytest
from tokenizers import Tokenizer

from memproc.models.embedder import Embedder
from memproc.models.manifest import (
    MANIFEST_NAME,
    OPTIMIZED_DATA,
    OPTIMIZED_GRAPH,
    OPTIMIZED_MANIFEST_NAME,
    ModelError,
    OptimizedManifest,
    load_verified,
    read_manifest,
    read_optimized,
    sha256_file,
    write_manifest,
)
from memproc.models.optimize import check_same_outputs, is_current
from memproc.models.pull import install, pull, verify_all
from modelkit import build_cross_encoder, copy_model, cross_encoder_bytes, flip_byte, seal

# Slow (models built and optimized, CLIs spawned): `make test` runs it, `make test-fast` does not.
pytestmark = pytest.mark.slow

TEXTS = [
    "where did I put the deployment notes",
    "The build fails on CI because the cache key omits the lockfile hash.",
    "ünïcödé ✓ 日本語",
]


@pytest.fixture(scope="module")
def installed_minilm(minilm_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """MiniLM installed into a models directory of its own: with its optimized copy."""
    models = tmp_path_factory.mktemp("installed")
    return Path(install(str(minilm_dir), str(models)))


@pytest.fixture
def minilm_copy(installed_minilm: Path, tmp_path: Path) -> Path:
    """A copy of the installed MiniLM, optimized copy included, for a test to damage."""
    return Path(shutil.copytree(installed_minilm, tmp_path / "models" / installed_minilm.name))


@pytest.fixture
def model_log(caplog: pytest.LogCaptureFixture) -> Iterator[pytest.LogCaptureFixture]:
    """Records of the models logger, whatever the service's logging set-up did to it."""
    logger = logging.getLogger("memproc.models")
    logger.addHandler(caplog.handler)
    caplog.set_level(logging.INFO, logger="memproc.models")
    try:
        yield caplog
    finally:
        logger.removeHandler(caplog.handler)


def unoptimized_vectors(directory: Path, texts: list[str]) -> np.ndarray:
    """Mean-pooled unit vectors from the published graph with every optimization off: what
    memproc's vectors were before sessions ran optimized."""
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(str(directory / "model.onnx"), options)
    tokenizer = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer.enable_truncation(256)
    tokenizer.enable_padding()
    encodings = tokenizer.encode_batch(texts)
    mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
    feeds = {
        "input_ids": np.array([e.ids for e in encodings], dtype=np.int64),
        "attention_mask": mask,
        "token_type_ids": np.zeros_like(mask),
    }
    hidden = session.run(None, feeds)[0]
    pooled = (hidden * mask[:, :, None]).sum(axis=1) / mask.sum(axis=1, keepdims=True)
    return np.asarray(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))


# -- made at install and pull -------------------------------------------------------------------


def test_install_makes_an_optimized_copy_pinned_beside_the_manifest(
    installed_minilm: Path, minilm_dir: Path
) -> None:
    optimized = read_optimized(str(installed_minilm))
    assert optimized is not None
    assert optimized.source == load_verified(str(installed_minilm)).files["model.onnx"]
    assert (optimized.onnxruntime, optimized.level) == (ort.__version__, "extended")
    assert set(optimized.files) == {OPTIMIZED_GRAPH, OPTIMIZED_DATA}
    for name, sha in optimized.files.items():
        assert sha256_file(str(installed_minilm / name)) == sha
    # The folded float32 weights sit in the data file (int8 MiniLM: ~23 MB -> ~90 MB).
    assert (installed_minilm / OPTIMIZED_DATA).stat().st_size > 3 * (
        installed_minilm / "model.onnx"
    ).stat().st_size
    # The model's own manifest is untouched, so its fingerprint and every stored vector stay.
    assert (installed_minilm / MANIFEST_NAME).read_bytes() == (
        minilm_dir / MANIFEST_NAME
    ).read_bytes()
    assert is_current(str(installed_minilm))


def test_the_copy_is_what_runs_and_its_vectors_equal_the_unoptimized_graph(
    installed_minilm: Path,
) -> None:
    embedder = Embedder(str(installed_minilm), threads=1)
    assert embedder.graph_path == str(installed_minilm / OPTIMIZED_GRAPH)
    options = embedder._session.get_session_options()
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    ours = embedder.embed(TEXTS)
    reference = unoptimized_vectors(installed_minilm, TEXTS)
    cosines = (ours * reference).sum(axis=1)
    assert cosines.min() >= 0.999
    np.testing.assert_allclose(ours, reference, atol=1e-5)


def test_pulling_a_model_an_older_memproc_built_adds_the_copy_and_downloads_nothing(
    minilm_dir: Path, tmp_path: Path
) -> None:
    models = tmp_path / "models"
    older = copy_model(minilm_dir, models / "minilm-l6-int8")  # model files and manifest only
    manifest_bytes = (older / MANIFEST_NAME).read_bytes()
    assert not is_current(str(older))
    messages: list[str] = []
    assert pull("minilm-l6-int8", str(models), progress=messages.append) == str(older)
    assert not any("pip" in message for message in messages), messages
    assert messages == [f"minilm-l6-int8: optimized copy made with onnxruntime {ort.__version__}"]
    assert is_current(str(older))
    assert (older / MANIFEST_NAME).read_bytes() == manifest_bytes
    assert sorted(os.listdir(models)) == ["minilm-l6-int8"]  # no staging directory left
    assert verify_all(str(models)) == {"minilm-l6-int8": None}
    messages.clear()
    pull("minilm-l6-int8", str(models), progress=messages.append)
    assert messages == ["minilm-l6-int8: already installed and verified"]


# -- checked by verify and at load ------------------------------------------------------------


@pytest.mark.parametrize("damaged", [OPTIMIZED_GRAPH, OPTIMIZED_DATA])
def test_a_tampered_copy_is_refused_by_verify_and_by_loading(
    minilm_copy: Path, damaged: str
) -> None:
    flip_byte(minilm_copy / damaged)
    failure = verify_all(str(minilm_copy.parent))[minilm_copy.name]
    assert failure is not None
    assert failure.startswith("hash_mismatch") and damaged in failure
    with pytest.raises(ModelError) as caught:
        Embedder(str(minilm_copy))
    assert caught.value.reason == "hash_mismatch"
    assert damaged in str(caught.value)


def test_a_missing_copy_file_is_refused(minilm_copy: Path) -> None:
    (minilm_copy / OPTIMIZED_DATA).unlink()
    with pytest.raises(ModelError) as caught:
        Embedder(str(minilm_copy))
    assert caught.value.reason == "missing_file"


def test_a_tampered_copy_is_rebuilt_by_pull_without_downloading(minilm_copy: Path) -> None:
    flip_byte(minilm_copy / OPTIMIZED_DATA)
    messages: list[str] = []
    pull(minilm_copy.name, str(minilm_copy.parent), progress=messages.append)
    assert not any("pip" in message for message in messages), messages
    assert verify_all(str(minilm_copy.parent)) == {minilm_copy.name: None}
    Embedder(str(minilm_copy))


def test_cli_verify_fails_on_a_tampered_copy(minilm_copy: Path) -> None:
    flip_byte(minilm_copy / OPTIMIZED_GRAPH)
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMPROC_")}
    result = subprocess.run(
        [sys.executable, "-m", "memproc", "models", "verify"],
        capture_output=True,
        text=True,
        env={**environment, "MEMPROC_MODELS": str(minilm_copy.parent)},
        timeout=120,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.startswith(f"FAILED  {minilm_copy.name}: hash_mismatch")
    assert OPTIMIZED_GRAPH in result.stdout


def test_an_invalid_copy_manifest_is_refused(minilm_copy: Path) -> None:
    (minilm_copy / OPTIMIZED_MANIFEST_NAME).write_text('{"source": "x"}')
    with pytest.raises(ModelError) as caught:
        Embedder(str(minilm_copy))
    assert caught.value.reason == "bad_manifest"
    assert OPTIMIZED_MANIFEST_NAME in str(caught.value)


# -- older directories and stale copies still load ----------------------------------------------


def test_a_directory_without_the_copy_loads_and_says_so(
    minilm_dir: Path, installed_minilm: Path, tmp_path: Path, model_log: pytest.LogCaptureFixture
) -> None:
    older = copy_model(minilm_dir, tmp_path / "older")
    embedder = Embedder(str(older))
    assert embedder.graph_path == str(older / "model.onnx")
    options = embedder._session.get_session_options()  # so optimized as it loads
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    warnings = [r for r in model_log.records if r.levelno == logging.WARNING]
    assert any("no optimized copy" in r.getMessage() for r in warnings), model_log.records
    assert any("memproc models pull" in r.getMessage() for r in warnings)
    # Optimized at load time instead: the same vectors as the copy gives.
    np.testing.assert_allclose(
        embedder.embed(TEXTS), Embedder(str(installed_minilm)).embed(TEXTS), atol=1e-5
    )


def test_a_copy_made_from_another_model_onnx_is_never_run(
    minilm_copy: Path, model_log: pytest.LogCaptureFixture
) -> None:
    """A model.onnx replaced (and the manifest re-sealed) after the copy was made: the copy is
    of another graph, so the new model.onnx is what loads, and here it is no graph at all."""
    (minilm_copy / "model.onnx").write_bytes(b"not an onnx graph")
    seal(minilm_copy, read_manifest(str(minilm_copy)))
    with pytest.raises(ModelError) as caught:
        Embedder(str(minilm_copy))
    assert caught.value.reason == "invalid_model"
    assert any("another model.onnx" in r.getMessage() for r in model_log.records)
    assert not is_current(str(minilm_copy))


def test_a_copy_onnxruntime_cannot_load_falls_back_to_model_onnx(
    minilm_copy: Path, model_log: pytest.LogCaptureFixture
) -> None:
    (minilm_copy / OPTIMIZED_GRAPH).write_bytes(b"garbage made by some other runtime")
    optimized = read_optimized_unchecked(minilm_copy)
    files = {**optimized.files, OPTIMIZED_GRAPH: sha256_file(str(minilm_copy / OPTIMIZED_GRAPH))}
    replaced = msgspec.structs.replace(optimized, files=files)
    write_manifest(str(minilm_copy), replaced, OPTIMIZED_MANIFEST_NAME)
    embedder = Embedder(str(minilm_copy))
    assert embedder.graph_path == str(minilm_copy / "model.onnx")
    assert any("does not load" in r.getMessage() for r in model_log.records)


def read_optimized_unchecked(directory: Path) -> OptimizedManifest:
    return msgspec.json.decode(
        (directory / OPTIMIZED_MANIFEST_NAME).read_bytes(), type=OptimizedManifest
    )


# -- the copy must be the same model --------------------------------------------------------------


def test_a_copy_whose_outputs_differ_is_refused(minilm_dir: Path, tmp_path: Path) -> None:
    directory = build_cross_encoder(tmp_path / "ce", minilm_dir / "tokenizer.json")
    shutil.copyfile(directory / "model.onnx", directory / OPTIMIZED_GRAPH)
    manifest = read_manifest(str(directory))
    check_same_outputs(str(directory), manifest)  # the same graph agrees with itself...
    (directory / OPTIMIZED_GRAPH).write_bytes(cross_encoder_bytes(two_class=True))
    with pytest.raises(ModelError) as caught:  # ...another one does not
        check_same_outputs(str(directory), manifest)
    assert caught.value.reason == "optimize_failed"


def test_a_model_the_optimizer_cannot_handle_installs_without_a_copy(
    minilm_dir: Path, tmp_path: Path
) -> None:
    source = build_cross_encoder(
        tmp_path / "ce", minilm_dir / "tokenizer.json", extra_input="position_ids"
    )
    messages: list[str] = []
    target = Path(install(str(source), str(tmp_path / "models"), progress=messages.append))
    assert read_optimized(str(target)) is None
    assert not (target / OPTIMIZED_GRAPH).exists()
    assert len(messages) == 1 and "no optimized copy" in messages[0], messages
