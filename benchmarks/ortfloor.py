"""The fastest way onnxruntime can embed, built from onnxruntime, tokenizers and numpy alone.

A speed floor must not inherit memproc's settings (HOUSE_STYLE 17: a floor is the best the
libraries can do), so nothing here imports memproc. The candidates are onnxruntime's
defaults and the settings worth trying on a small CPU, on the graph as published and on the
copy onnxruntime's own offline optimizer writes (made here, into a temporary directory);
`fastest()` times every candidate on the workload, interleaved, and keeps the best.

Each candidate does the whole of an embedding call: tokenize, pad to the longest text, run the
graph, pool (mean or CLS, as the model's manifest says) and normalize.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
import onnxruntime as ort
from tokenizers import Tokenizer

# Many texts in one call can be slower than the same texts in a few calls: attention's
# activations grow with the square of the length and fall out of the CPU's caches.
SPLIT_TOKENS = 512
OFFLINE_GRAPH = "offline.onnx"
OFFLINE_DATA = "offline.data"


@dataclass(frozen=True)
class Candidate:
    name: str
    offline: bool  # run onnxruntime's offline-optimized copy instead of the published graph
    options: Callable[[], Any]
    max_tokens: int | None = None  # split a call into length-sorted runs of this many tokens


def _options(
    level: Any = None, threads: int | None = None, spinning: bool = True, arena: bool = True
) -> Callable[[], Any]:
    def build() -> Any:
        options = ort.SessionOptions()
        options.log_severity_level = 3
        if level is not None:
            options.graph_optimization_level = level
        if threads is not None:
            options.intra_op_num_threads = threads
        if not spinning:
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.enable_cpu_mem_arena = arena
        return options

    return build


def candidates() -> list[Candidate]:
    """onnxruntime's defaults (every optimization, a thread per core, spinning, arena), then
    one thread and a thread per core with and without spinning, extended level, and the
    offline copy: the settings that can make a small model fast on a shared CPU."""
    cores = os.cpu_count() or 1
    level = ort.GraphOptimizationLevel
    found = [Candidate("ort defaults", False, _options())]
    for threads in sorted({1, cores}):
        found.append(Candidate(f"all, {threads} thr", False, _options(threads=threads)))
        found.append(
            Candidate(
                f"all, {threads} thr, no spin, no arena",
                False,
                _options(threads=threads, spinning=False, arena=False),
            )
        )
        found.append(
            Candidate(
                f"offline copy, {threads} thr, no spin",
                True,
                _options(threads=threads, spinning=False),
            )
        )
    found.append(
        Candidate(f"extended, {cores} thr", False, _options(level.ORT_ENABLE_EXTENDED, cores))
    )
    for threads in sorted({1, cores}):
        found.append(
            Candidate(
                f"offline copy, {threads} thr, no spin, runs of <= {SPLIT_TOKENS} tokens",
                True,
                _options(threads=threads, spinning=False),
                SPLIT_TOKENS,
            )
        )
    return found


def offline_copy(model_dir: str, into: str) -> str:
    """onnxruntime's offline mode: the graph optimized (extended level) and saved, its weights
    in a file of their own so that a session maps them instead of copying them."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    options.optimized_model_filepath = os.path.join(into, OFFLINE_GRAPH)
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_file_name", OFFLINE_DATA
    )
    options.add_session_config_entry(
        "session.optimized_model_external_initializers_min_size_in_bytes", "1024"
    )
    ort.InferenceSession(
        os.path.join(model_dir, "model.onnx"), options, providers=["CPUExecutionProvider"]
    )
    return options.optimized_model_filepath


class OrtEmbedder:
    """Texts -> unit vectors with one candidate's session: the floor's whole call."""

    def __init__(
        self, model_dir: str, graph: str, options: Any, max_tokens: int | None = None
    ) -> None:
        self.max_tokens = max_tokens
        with open(os.path.join(model_dir, "memproc-model.json"), "rb") as handle:
            described = json.load(handle)  # pooling and length: what the model is, not settings
        self.pooling = described.get("pooling", "cls")
        self.normalize = described.get("normalize", True)
        self.query_prefix = described.get("query_prefix", "")
        self.document_prefix = described.get("document_prefix", "")
        self.tokenizer = Tokenizer.from_file(os.path.join(model_dir, "tokenizer.json"))
        self.tokenizer.enable_truncation(described.get("max_length", 512))
        self.tokenizer.no_padding()  # each call pads to its own longest text
        self.session = ort.InferenceSession(graph, options, providers=["CPUExecutionProvider"])
        self.inputs = {node.name for node in self.session.get_inputs()}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        encodings = self.tokenizer.encode_batch(list(texts))
        if self.max_tokens is None:
            return self.run(encodings)
        parts = [(run, self.run([encodings[i] for i in run])) for run in self._runs(encodings)]
        out = np.empty((len(encodings), parts[0][1].shape[1]), dtype=np.float32)
        for run, rows in parts:
            out[run] = rows
        return out

    def _runs(self, encodings: Sequence[Any]) -> list[list[int]]:
        """Indices sorted by length, cut so that each run pads to at most max_tokens."""
        order = sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids))
        runs: list[list[int]] = [[]]
        for index in order:
            longest = len(encodings[index].ids)
            if runs[-1] and longest * (len(runs[-1]) + 1) > (self.max_tokens or 0):
                runs.append([])
            runs[-1].append(index)
        return runs

    def run(self, encodings: Sequence[Any]) -> np.ndarray:
        width = max(len(encoding.ids) for encoding in encodings)
        ids = np.zeros((len(encodings), width), dtype=np.int64)
        mask = np.zeros_like(ids)
        for row, encoding in enumerate(encodings):
            ids[row, : len(encoding.ids)] = encoding.ids
            mask[row, : len(encoding.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        hidden = self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[0]
        if self.pooling == "cls":
            pooled = hidden[:, 0]
        else:
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        if self.normalize:
            pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
        return pooled


def load(model_dir: str, candidate: Candidate, offline_dir: str) -> OrtEmbedder:
    graph = os.path.join(model_dir, "model.onnx")
    if candidate.offline:
        graph = os.path.join(offline_dir, OFFLINE_GRAPH)
        if not os.path.exists(graph):
            offline_copy(model_dir, offline_dir)
    return OrtEmbedder(model_dir, graph, candidate.options(), candidate.max_tokens)


def reference(model_dir: str) -> OrtEmbedder:
    """The published graph with no optimization at all: what every row must stay equal to."""
    options = ort.SessionOptions()
    options.log_severity_level = 3
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return OrtEmbedder(model_dir, os.path.join(model_dir, "model.onnx"), options)


def timed(action: Callable[[], object]) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def interleaved(
    calls: dict[str, Callable[[], object]], rounds: int, warmup: int = 2
) -> dict[str, float]:
    """Median seconds of each call, run round by round, in a new order each round, so that
    machine noise (and whatever the call before left in the caches) hits all of them alike."""
    for _ in range(warmup):
        for call in calls.values():
            call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    shuffle = random.Random(0).shuffle
    for _ in range(rounds):
        shuffle(order)
        for name in order:
            samples[name].append(timed(calls[name]))
    return {name: statistics.median(values) for name, values in samples.items()}


def fastest(
    model_dir: str, offline_dir: str, workloads: dict[str, Sequence[str]], rounds: int
) -> dict[str, tuple[str, OrtEmbedder]]:
    """For each named workload (a list of texts embedded in one call), the name and embedder
    of the candidate with the lowest median, every candidate timed on it."""
    loaded = {c.name: load(model_dir, c, offline_dir) for c in candidates()}
    chosen = {}
    for workload, texts in workloads.items():
        medians = interleaved(
            {name: (lambda e=embedder, t=texts: e.embed(t)) for name, embedder in loaded.items()},
            rounds,
        )
        name = min(medians, key=medians.__getitem__)
        chosen[workload] = (name, loaded[name])
    return chosen


def embed_all(embedder: OrtEmbedder, texts: Sequence[str], batch: int = 64) -> np.ndarray:
    """Many texts the fast way: tokenized once, then sorted by length so that each call pads
    little, `batch` at a time."""
    encodings = embedder.tokenizer.encode_batch(list(texts))
    order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))
    rows: list[np.ndarray] = []
    for start in range(0, len(order), batch):
        rows.append(embedder.run([encodings[i] for i in order[start : start + batch]]))
    out = np.empty((len(texts), rows[0].shape[1]), dtype=np.float32)
    out[order] = np.concatenate(rows)
    return out
