"""Cross-encoder reranking: (query, passage) pairs -> relevance in [0, 1] as sigmoid(logit)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from memproc.models.manifest import ModelError
from memproc.models.runtime import OnnxModel


class Reranker(OnnxModel):
    kind = "reranker"
    pairs = True

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One probability-like score per passage, in the passages' order."""
        scores = np.zeros(len(passages), dtype=np.float32)
        pairs = [(self.manifest.query_prefix + query, passage) for passage in passages]
        return self._run_batched(pairs, scores, self._score_batch)

    def _score_batch(self, feeds: dict[str, np.ndarray]) -> np.ndarray:
        logits = self._run(feeds)
        if logits.ndim == 2 and logits.shape[1] == 2:  # two-class head: softmax, take "relevant"
            logits = logits[:, 1] - logits[:, 0]
        if logits.size != len(logits):
            raise ModelError("invalid_model", f"reranker output has shape {logits.shape}")
        return sigmoid(logits.reshape(len(logits)))


def sigmoid(x: np.ndarray) -> np.ndarray:
    """1 / (1 + e^-x), written with tanh so that large |x| cannot overflow."""
    return 0.5 * (1.0 + np.tanh(0.5 * x))
