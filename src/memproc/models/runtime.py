"""onnxruntime sessions and tokenizers, set up the same way for every model.

onnxruntime and tokenizers are imported lazily (inside functions) so that starting the
service does not pay for them: models load on a background thread after start-up.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from memproc.models.batching import length_sorted_batches, pad_batch
from memproc.models.manifest import (
    OPTIMIZED_GRAPH,
    SOURCE_GRAPH,
    ModelError,
    ModelManifest,
    OptimizedManifest,
    load_verified,
    read_optimized,
)

log = logging.getLogger("memproc.models")

# The inputs pad_batch can feed; a graph that needs anything else cannot be run.
FEEDABLE_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


def session_options(threads: int, level: str = "all") -> Any:
    """Options for a CPU session in a long-lived service that shares its machine.

    - Every graph optimization (`all`), constant folding included. Folding turns an int8
      model's dequantization (a cast and a multiply per weight matrix) into float32 weights once,
      instead of on every call: without it one short MiniLM call took ~90-120 ms, with it 7-10
      ms on an idle core (issue 12; benchmarks/embed_speed.py). The memory that folding at
      load time costs is avoided by loading the optimized copy that `models pull` saved (see
      `optimize.py`), whose weights are mapped from disk.
    - A fixed thread count, spinning off: spinning threads burn cores that the service's other
      work and other processes need, and measured no faster on this shared 2-core machine
      (benchmarks/embed_speed.py times both).
    - No CPU memory arena: the arena keeps the peak of the largest batch ever run (hundreds of
      MB after one long batch); without it memory is returned after each batch.
    - No telemetry: since 1.29, onnxruntime on Linux and macOS queues events (process, session
      and error details) in a SQLite file under ~/.cache/Microsoft/DeveloperTools for upload to
      Microsoft, unless ORT_DISABLE_TELEMETRY is set when it starts. memproc keeps to its
      database and model cache. An explicit setting in the environment wins.
    """
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = OPTIMIZATION_LEVELS[level](ort)
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    return options


OPTIMIZATION_LEVELS: dict[str, Callable[[Any], Any]] = {
    "disabled": lambda ort: ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "extended": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
    "all": lambda ort: ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def open_session(path: str, options: Any) -> Any:
    """An onnxruntime session on the CPU, its failures mapped to ModelError."""
    import onnxruntime as ort

    try:
        return ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime raises its own pybind exception types
        name = os.path.basename(path)
        raise ModelError("invalid_model", f"onnxruntime cannot load {name}: {exc}") from None


# Sessions by (graph file, its hashes, threads). Values are weak: a session lives as long as a
# model uses it, and is freed with the last one.
_SESSIONS: weakref.WeakValueDictionary[tuple[str, str, int], Any] = weakref.WeakValueDictionary()
_SESSIONS_LOCK = threading.Lock()


def shared_session(path: str, digest: str, threads: int, level: str = "all") -> Any:
    """One session per graph file and thread count in the process, however many models (one
    per Runtime, benchmark or index command) load it: the session holds the weights, and
    onnxruntime's Run is safe to call from several threads at once. `digest` names the files'
    contents, so a model rebuilt in place is never served from its old session."""
    key = (os.path.realpath(path), digest, threads)
    with _SESSIONS_LOCK:
        session = _SESSIONS.get(key)
        if session is None:
            session = open_session(path, session_options(threads, level))
            _SESSIONS[key] = session
    return session


def make_session(directory: str, manifest: ModelManifest, threads: int) -> tuple[Any, str]:
    """The session for a verified model directory and the graph file it runs: the optimized
    copy when the directory has a current one, else model.onnx, optimized as it loads (as
    fast, but its float32 weights are built on the heap at each start: ~160 MB more peak
    memory for MiniLM). Either way the log says which, and why."""
    optimized = current_optimized(directory, manifest)
    if optimized is not None:
        path = os.path.join(directory, OPTIMIZED_GRAPH)
        try:
            # Optimized at pull time: running the optimizers again finds nothing to do and
            # costs ~30 ms of every start, so they are off, as onnxruntime advises for graphs
            # optimized offline (measured on MiniLM: the same outputs, the same call time).
            session = shared_session(path, _digest(optimized.files), threads, "disabled")
            return session, path
        except ModelError as exc:
            log.warning(
                "optimized copy does not load; optimizing model.onnx at load time instead",
                extra={"model": manifest.name, "reason": str(exc)},
            )
    path = os.path.join(directory, SOURCE_GRAPH)
    return shared_session(path, manifest.files[SOURCE_GRAPH], threads), path


def current_optimized(directory: str, manifest: ModelManifest) -> OptimizedManifest | None:
    """The directory's optimized copy if it was made from this model.onnx. A missing or stale
    copy is logged (the model still loads); a damaged one raises, like any pinned file."""
    optimized = read_optimized(directory, trust_record=True)
    if optimized is None:
        log.warning(
            "model has no optimized copy (built by an older memproc?); optimizing model.onnx "
            "at load time, which costs memory at start-up: `memproc models pull` (or "
            "`models install`) adds the copy",
            extra={"model": manifest.name},
        )
    elif optimized.source != manifest.files[SOURCE_GRAPH]:
        log.warning(
            "optimized copy was made from another model.onnx; ignoring it",
            extra={"model": manifest.name},
        )
        optimized = None
    return optimized


def _digest(files: dict[str, str]) -> str:
    return ",".join(f"{name}={sha}" for name, sha in sorted(files.items()))


def load_tokenizer(directory: str, manifest: ModelManifest, *, pairs: bool = False) -> Any:
    """Explicit truncation at the manifest's max_length and no padding: the tokenizer.json of
    a downloaded model may carry fixed padding (MiniLM's pads everything to 128), and we pad
    each batch only to its own longest sequence instead."""
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(os.path.join(directory, "tokenizer.json"))
    except Exception as exc:
        raise ModelError("invalid_tokenizer", f"cannot load tokenizer.json: {exc}") from None
    tokenizer.no_padding()
    strategy = "only_second" if pairs else "longest_first"
    tokenizer.enable_truncation(manifest.max_length, strategy=strategy)
    return tokenizer


def run_session(session: Any, feeds: dict[str, Any]) -> list[Any]:
    try:
        result: list[Any] = session.run(None, feeds)
    except Exception as exc:
        raise ModelError("inference_failed", f"onnxruntime inference failed: {exc}") from None
    return result


def graph_inputs(session: Any) -> frozenset[str]:
    """The graph's input names, refused at load time (not at the first request) when the
    graph wants an input that a tokenizer cannot supply."""
    names = frozenset(node.name for node in session.get_inputs())
    unknown = names - FEEDABLE_INPUTS
    if unknown:
        raise ModelError("invalid_model", f"model.onnx needs unsupported inputs {sorted(unknown)}")
    return names


class OnnxModel:
    """What every model shares: a verified directory of the right kind, an onnxruntime session,
    a tokenizer, and length-sorted batched inference. Subclasses say which kind they are and
    what one batch computes."""

    kind: ClassVar[str]
    pairs: ClassVar[bool] = False  # the tokenizer encodes (query, passage) pairs

    def __init__(self, directory: str, threads: int = 1) -> None:
        manifest = load_verified(directory, trust_record=True)
        if manifest.kind != self.kind:
            raise ModelError(
                "wrong_kind", f"{manifest.name} is a {manifest.kind}, not a {self.kind}"
            )
        self.manifest: ModelManifest = manifest
        self._session, self.graph_path = make_session(directory, manifest, threads)
        self._input_names = graph_inputs(self._session)
        self._tokenizer = load_tokenizer(directory, manifest, pairs=self.pairs)

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def session(self) -> Any:
        """The onnxruntime session (shared by every model over the same graph and threads)."""
        return self._session

    def feeds(self, inputs: Sequence[Any]) -> dict[str, np.ndarray]:
        """The session's feeds for `inputs`, tokenized and padded as one batch: what a
        benchmark's floor hands onnxruntime directly."""
        return self._feeds(self._tokenizer.encode_batch(list(inputs)))

    def _run_batched(
        self, inputs: Sequence[Any], out: np.ndarray, batch_fn: Callable[[dict[str, Any]], Any]
    ) -> np.ndarray:
        """Tokenize `inputs`, run them in length-sorted batches and write each batch's rows of
        `out` in the inputs' original order."""
        if not inputs:
            return out
        encodings = self._tokenizer.encode_batch(list(inputs))
        lengths = [len(encoding.ids) for encoding in encodings]
        for batch in length_sorted_batches(lengths):
            out[batch] = batch_fn(self._feeds([encodings[i] for i in batch]))
        return out

    def _feeds(self, encodings: Sequence[Any]) -> dict[str, np.ndarray]:
        return {k: v for k, v in pad_batch(encodings).items() if k in self._input_names}

    def _run(self, feeds: dict[str, Any]) -> np.ndarray:
        """The graph's first output as float32."""
        return np.asarray(run_session(self._session, feeds)[0], dtype=np.float32)
