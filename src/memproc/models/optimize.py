"""The optimized copy of a model's graph, made once when a model is pulled or installed.

onnxruntime's optimizer folds an int8 model's dequantization into float32 weights and fuses
its layer norms and activations. Done at every load (online), that costs MiniLM about 0.3 s
and a peak of ~280 MB: the int8 weights, the float32 ones folded from them and the packed
copies exist at once. Done here, once, with onnxruntime's own `optimized_model_filepath` and
the weights written to a file of their own, the service maps those weights from disk
instead: the session loads in ~0.05 s with a peak of ~120 MB, and runs the same graph as the
online optimizer would, so at the same speed (benchmarks/embed_speed.py measures all three).

The copy is made at the `extended` level, not `all`: the layout optimizations that `all`
adds can tie a saved graph to the CPU that made it (onnxruntime's graph optimization docs),
and none applies to these transformer graphs. The service loads the copy with its optimizers
off: running them again finds nothing left to do and costs ~30 ms of every start.

Before the copy is kept, both graphs run the same probe texts and must agree (to 1e-3 of the
largest output): the copy is the same model, not an approximation of it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, Final, Literal

import numpy as np

from memproc.models.batching import pad_batch
from memproc.models.manifest import (
    OPTIMIZED_DATA,
    OPTIMIZED_GRAPH,
    OPTIMIZED_MANIFEST_NAME,
    SOURCE_GRAPH,
    ModelError,
    ModelManifest,
    OptimizedManifest,
    load_verified,
    read_manifest,
    read_optimized,
    sha256_file,
    write_manifest,
)
from memproc.models.runtime import load_tokenizer, open_session, session_options

Progress = Callable[[str], None]
LEVEL: Final[Literal["extended"]] = "extended"
# Initializers at least this large go to the weights file: mapped from disk, not copied.
EXTERNAL_MIN_BYTES = 1024
TOLERANCE = 1e-3  # of the largest reference output
PROBES = (
    "where did I put the deployment notes",
    "The build fails on CI because the cache key omits the lockfile hash, so stale "
    "dependencies are restored and pytest imports the wrong version of numpy.",
    "ünïcödé ✓ 日本語",
    "a",
)


def optimize(directory: str, progress: Progress) -> OptimizedManifest | None:
    """Write the optimized copy into `directory` (a staging directory: nothing is serving
    from it) and pin it in its manifest. A model the optimizer cannot save, or whose copy
    does not agree with it, gets no copy, and says so: it still loads, optimized at load time.
    """
    manifest = load_verified(directory)
    _remove_copy(directory)
    try:
        optimized = _save_copy(directory, manifest)
        check_same_outputs(directory, manifest)
    except ModelError as exc:
        _remove_copy(directory)
        progress(
            f"{manifest.name}: no optimized copy ({exc.reason}: {exc}); it will be optimized "
            "at each load instead (slower start, more memory)"
        )
        return None
    write_manifest(directory, optimized, OPTIMIZED_MANIFEST_NAME)
    progress(f"{manifest.name}: optimized copy made with onnxruntime {optimized.onnxruntime}")
    return optimized


def is_current(directory: str) -> bool:
    """The directory has an intact optimized copy of its model.onnx, made by this onnxruntime."""
    import onnxruntime as ort

    try:
        optimized = read_optimized(directory)
        source = read_manifest(directory).files[SOURCE_GRAPH]
    except ModelError:
        return False
    return (
        optimized is not None
        and optimized.source == source
        and optimized.onnxruntime == ort.__version__
    )


def _save_copy(directory: str, manifest: ModelManifest) -> OptimizedManifest:
    """onnxruntime's offline mode: a session that writes the graph it optimized."""
    import onnxruntime as ort

    options = session_options(1, LEVEL)
    options.optimized_model_filepath = os.path.join(directory, OPTIMIZED_GRAPH)
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", OPTIMIZED_DATA
    )
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes",
        str(EXTERNAL_MIN_BYTES),
    )
    open_session(os.path.join(directory, SOURCE_GRAPH), options)
    made = [name for name in (OPTIMIZED_GRAPH, OPTIMIZED_DATA) if _exists(directory, name)]
    if OPTIMIZED_GRAPH not in made:
        raise ModelError("optimize_failed", f"onnxruntime wrote no {OPTIMIZED_GRAPH}")
    return OptimizedManifest(
        source=manifest.files[SOURCE_GRAPH],
        onnxruntime=ort.__version__,
        level=LEVEL,
        files={name: sha256_file(os.path.join(directory, name)) for name in made},
    )


def check_same_outputs(directory: str, manifest: ModelManifest) -> None:
    """The copy, loaded as the service loads it, against model.onnx with no optimization."""
    reference = _run_probes(os.path.join(directory, SOURCE_GRAPH), "disabled", directory, manifest)
    copy = _run_probes(os.path.join(directory, OPTIMIZED_GRAPH), "disabled", directory, manifest)
    if reference.shape != copy.shape:
        raise ModelError("optimize_failed", f"output shape {copy.shape}, not {reference.shape}")
    scale = max(1.0, float(np.abs(reference).max()))
    difference = float(np.abs(copy - reference).max())
    if not difference <= TOLERANCE * scale:  # also refuses NaN
        raise ModelError(
            "optimize_failed", f"the copy's outputs differ by {difference:.2g} (of {scale:.3g})"
        )


def _run_probes(path: str, level: str, directory: str, manifest: ModelManifest) -> np.ndarray:
    session = open_session(path, session_options(1, level))
    names = {node.name for node in session.get_inputs()}
    tokenizer = load_tokenizer(directory, manifest)
    feeds: dict[str, Any] = {
        name: value
        for name, value in pad_batch(tokenizer.encode_batch(list(PROBES))).items()
        if name in names
    }
    try:
        return np.asarray(session.run(None, feeds)[0], dtype=np.float64)
    except Exception as exc:  # onnxruntime raises its own pybind exception types
        raise ModelError("optimize_failed", f"onnxruntime cannot run {path}: {exc}") from None


def _exists(directory: str, name: str) -> bool:
    return os.path.isfile(os.path.join(directory, name))


def _remove_copy(directory: str) -> None:
    for name in (OPTIMIZED_MANIFEST_NAME, OPTIMIZED_GRAPH, OPTIMIZED_DATA):
        if _exists(directory, name):
            os.remove(os.path.join(directory, name))
