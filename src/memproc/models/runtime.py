"""onnxruntime sessions and tokenizers, set up the same way for every model.

onnxruntime and tokenizers are imported lazily (inside functions) so that starting the
service does not pay for them: models load on a background thread after start-up.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from memproc.models.batching import length_sorted_batches, pad_batch
from memproc.models.manifest import ModelError, ModelManifest, load_verified

# The inputs pad_batch can feed; a graph that needs anything else cannot be run.
FEEDABLE_INPUTS = frozenset({"input_ids", "attention_mask", "token_type_ids"})


def make_session(directory: str, threads: int) -> Any:
    """A CPU session tuned for a long-lived service that shares its machine.

    - A fixed thread count, spinning off: spinning threads burn cores that the service's other
      work and other processes need.
    - Basic graph optimizations without constant folding: folding dequantizes an int8 model's
      weights into float32 at load time, which for MiniLM costs about 125 MB of resident
      memory and 0.15 s of start-up for a 10-20% faster forward pass (measured here).
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
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.enable_cpu_mem_arena = False
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(
            os.path.join(directory, "model.onnx"),
            options,
            providers=["CPUExecutionProvider"],
            disabled_optimizers=["ConstantFolding"],
        )
    except Exception as exc:  # onnxruntime raises its own pybind exception types
        raise ModelError("invalid_model", f"onnxruntime cannot load model.onnx: {exc}") from None


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
        manifest = load_verified(directory)
        if manifest.kind != self.kind:
            raise ModelError(
                "wrong_kind", f"{manifest.name} is a {manifest.kind}, not a {self.kind}"
            )
        self.manifest: ModelManifest = manifest
        self._session = make_session(directory, threads)
        self._input_names = graph_inputs(self._session)
        self._tokenizer = load_tokenizer(directory, manifest, pairs=self.pairs)

    @property
    def name(self) -> str:
        return self.manifest.name

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
