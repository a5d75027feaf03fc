"""Cross-encoder reranking: (query, passage) pairs -> relevance in [0, 1] as sigmoid(logit)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memproc.models.batching import length_sorted_batches, pad_batch
from memproc.models.manifest import ModelError, ModelManifest, load_verified
from memproc.models.runtime import load_tokenizer, make_session, run_session


class Reranker:
    def __init__(self, directory: str, threads: int = 1) -> None:
        manifest = load_verified(directory)
        if manifest.kind != "reranker":
            raise ModelError("wrong_kind", f"{manifest.name} is a {manifest.kind}, not a reranker")
        self.manifest: ModelManifest = manifest
        self._session = make_session(directory, threads)
        self._tokenizer = load_tokenizer(directory, manifest, pairs=True)
        self._input_names = {node.name for node in self._session.get_inputs()}

    @property
    def name(self) -> str:
        return self.manifest.name

    def score(self, query: str, passages: Sequence[str]) -> np.ndarray:
        """One probability-like score per passage, in the passages' order."""
        scores = np.zeros(len(passages), dtype=np.float32)
        if not passages:
            return scores
        pairs = [(self.manifest.query_prefix + query, passage) for passage in passages]
        encodings = self._tokenizer.encode_batch(pairs)
        lengths = [len(encoding.ids) for encoding in encodings]
        for batch in length_sorted_batches(lengths):
            scores[batch] = self._score_batch([encodings[i] for i in batch])
        return scores

    def _score_batch(self, encodings: Sequence[Any]) -> np.ndarray:
        feeds = {k: v for k, v in pad_batch(encodings).items() if k in self._input_names}
        logits = np.asarray(run_session(self._session, feeds)[0], dtype=np.float32)
        if logits.ndim == 2 and logits.shape[1] == 2:  # two-class head: softmax, take "relevant"
            logits = logits[:, 1] - logits[:, 0]
        return 1.0 / (1.0 + np.exp(-logits.reshape(len(encodings))))
