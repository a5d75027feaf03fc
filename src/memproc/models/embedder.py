"""Text -> unit vectors with a BERT-family ONNX embedder (CLS or mean pooling, per manifest)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memproc.models.batching import length_sorted_batches, pad_batch
from memproc.models.manifest import ModelError, ModelManifest, load_verified
from memproc.models.runtime import load_tokenizer, make_session, run_session


class Embedder:
    def __init__(self, directory: str, threads: int = 1) -> None:
        manifest = load_verified(directory)
        if manifest.kind != "embedder":
            raise ModelError("wrong_kind", f"{manifest.name} is a {manifest.kind}, not an embedder")
        self.manifest: ModelManifest = manifest
        self.dims: int = manifest.dims or 0
        self._session = make_session(directory, threads)
        self._tokenizer = load_tokenizer(directory, manifest)
        self._input_names = {node.name for node in self._session.get_inputs()}
        self._check_dims()

    @property
    def name(self) -> str:
        return self.manifest.name

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.manifest.document_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.manifest.query_prefix + text for text in texts])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dims); rows are unit length if normalize is on."""
        output = np.zeros((len(texts), self.dims), dtype=np.float32)
        if not texts:
            return output
        encodings = self._tokenizer.encode_batch(list(texts))
        lengths = [len(encoding.ids) for encoding in encodings]
        for batch in length_sorted_batches(lengths):
            output[batch] = self._embed_batch([encodings[i] for i in batch])
        return output

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def _embed_batch(self, encodings: Sequence[Any]) -> np.ndarray:
        feeds = {k: v for k, v in pad_batch(encodings).items() if k in self._input_names}
        hidden = run_session(self._session, feeds)[0]
        pooled = self._pool(np.asarray(hidden, dtype=np.float32), feeds["attention_mask"])
        if self.manifest.normalize:
            norms = np.linalg.norm(pooled, axis=1, keepdims=True)
            pooled = pooled / np.maximum(norms, 1e-12)
        return pooled

    def _pool(self, hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
        if hidden.ndim == 2:  # the graph pools by itself
            return hidden
        if self.manifest.pooling == "cls":
            return hidden[:, 0, :]
        weights = mask[:, :, None].astype(np.float32)
        return (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)

    def _check_dims(self) -> None:
        probe = self.embed(["dimension probe"])
        if probe.shape[1] != self.dims or not np.isfinite(probe).all():
            raise ModelError("bad_manifest", f"model output does not match dims={self.dims}")
