"""onnxruntime sessions and tokenizers, set up the same way for every model.

onnxruntime and tokenizers are imported lazily (inside functions) so that starting the
service does not pay for them: models load on a background thread after start-up.
"""

from __future__ import annotations

import os
from typing import Any

from memproc.models.manifest import ModelError, ModelManifest


def make_session(directory: str, threads: int) -> Any:
    """A CPU session with a fixed thread count and spinning off: spinning threads would burn
    cores that the service's other work and other processes on the machine need."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.add_session_config_entry("session.inter_op.allow_spinning", "0")
    options.log_severity_level = 3
    try:
        return ort.InferenceSession(
            os.path.join(directory, "model.onnx"), options, providers=["CPUExecutionProvider"]
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
