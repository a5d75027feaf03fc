"""Text -> unit vectors with a BERT-family ONNX embedder (CLS or mean pooling, per manifest)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memproc.models.manifest import ModelError
from memproc.models.runtime import OnnxModel


class Embedder(OnnxModel):
    kind = "embedder"

    def __init__(self, directory: str, threads: int = 1) -> None:
        super().__init__(directory, threads)
        self.dims: int = self.manifest.dims or 0
        self._check_dims()

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.manifest.document_prefix + text for text in texts])

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([self.manifest.query_prefix + text for text in texts])

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """float32 array of shape (len(texts), dims); rows are unit length if normalize is on."""
        output = np.zeros((len(texts), self.dims), dtype=np.float32)
        return self._run_batched(texts, output, self._embed_batch)

    def token_counts(self, texts: Sequence[str]) -> list[int]:
        return [len(e.ids) for e in self._tokenizer.encode_batch(list(texts))]

    def _embed_batch(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        pooled = self._pool(self._run(feeds), feeds["attention_mask"])
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
        """Run one text at load time so a manifest that lies about dims fails here, with a
        clear reason, rather than inside the first request."""
        probe = self._embed_batch(self._feeds(self._tokenizer.encode_batch(["dimension probe"])))
        if probe.shape != (1, self.dims) or not np.isfinite(probe).all():
            raise ModelError("bad_manifest", f"model output does not match dims={self.dims}")
