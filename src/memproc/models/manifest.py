"""The model manifest, `memproc-model.json`, and verification of the files it pins.

Beside it, `memproc-optimized.json` pins the optimized copy of the graph that `models pull` and
`models install` make on this machine (see `optimize.py`). It is a manifest of its own, not
more entries in the first: the first names the model and its fingerprint keys every stored
vector, while the optimized copy is a local, rebuildable form of the same graph. Keeping them
apart leaves the fingerprint, and every store's vectors, as they were, and older versions of
memproc, which refuse unknown manifest fields, can still read a directory this one built.
"""

from __future__ import annotations

import hashlib
import os
from typing import Annotated, Literal

import msgspec

from memproc.models import hash_record

MANIFEST_NAME = "memproc-model.json"
OPTIMIZED_MANIFEST_NAME = "memproc-optimized.json"
SOURCE_GRAPH = "model.onnx"
OPTIMIZED_GRAPH = "model.optimized.onnx"
OPTIMIZED_DATA = "model.optimized.data"  # the optimized graph's weights, mapped from disk
REQUIRED_FILES = (SOURCE_GRAPH, "tokenizer.json")
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]


# What a model is for, and how an embedder pools its tokens: the manifest, the catalog and
# the model manager all use these.
ModelKind = Literal["embedder", "reranker"]
Pooling = Literal["cls", "mean"]


class ModelError(Exception):
    """A model directory cannot be used. `reason` is a short machine-readable word."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ModelManifest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    name: Annotated[str, msgspec.Meta(pattern="^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    kind: ModelKind
    pooling: Pooling = "cls"
    normalize: bool = True
    dims: Annotated[int, msgspec.Meta(ge=1, le=8192)] | None = None
    max_length: Annotated[int, msgspec.Meta(ge=8, le=8192)] = 512
    query_prefix: str = ""
    document_prefix: str = ""
    files: dict[str, Sha256]
    licence: str
    source: str


class OptimizedManifest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    """The optimized copy of a model's graph: what it was made from and the files it is."""

    source: Sha256  # sha256 of the model.onnx it was made from; another one makes it stale
    onnxruntime: str  # the version that made it
    level: Literal["extended"]  # the onnxruntime optimization level baked into it
    files: dict[str, Sha256]


def manifest_path(directory: str, name: str = MANIFEST_NAME) -> str:
    return os.path.join(directory, name)


def read_manifest(directory: str) -> ModelManifest:
    try:
        with open(manifest_path(directory), "rb") as handle:
            manifest = msgspec.json.decode(handle.read(), type=ModelManifest)
    except FileNotFoundError:
        raise ModelError("missing", f"no {MANIFEST_NAME} in {directory}") from None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ModelError("bad_manifest", f"{MANIFEST_NAME} is invalid: {exc}") from None
    _check_shape(manifest)
    return manifest


def _check_shape(manifest: ModelManifest) -> None:
    missing = [name for name in REQUIRED_FILES if name not in manifest.files]
    if missing:
        raise ModelError("bad_manifest", f"manifest does not pin {', '.join(missing)}")
    if manifest.kind == "embedder" and manifest.dims is None:
        raise ModelError("bad_manifest", "an embedder manifest must give dims")
    _check_file_names(manifest.files)


def _check_file_names(files: dict[str, str]) -> None:
    for name in files:
        if os.path.basename(name) != name or name.startswith("."):
            raise ModelError("bad_manifest", f"file name {name!r} must be a plain file name")


def write_manifest(
    directory: str, manifest: ModelManifest | OptimizedManifest, name: str = MANIFEST_NAME
) -> None:
    data = msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"
    temporary = manifest_path(directory, name) + ".tmp"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, manifest_path(directory, name))


def read_optimized(directory: str, *, trust_record: bool = False) -> OptimizedManifest | None:
    """The optimized copy's manifest with its files verified, or None when there is none.
    A copy that is present but damaged is an error, never silently skipped: something has
    changed files in the model directory. `trust_record`: see `verify_files`."""
    try:
        with open(manifest_path(directory, OPTIMIZED_MANIFEST_NAME), "rb") as handle:
            optimized = msgspec.json.decode(handle.read(), type=OptimizedManifest)
    except FileNotFoundError:
        return None
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise ModelError("bad_manifest", f"{OPTIMIZED_MANIFEST_NAME} is invalid: {exc}") from None
    _check_file_names(optimized.files)
    if OPTIMIZED_GRAPH not in optimized.files:
        raise ModelError(
            "bad_manifest", f"{OPTIMIZED_MANIFEST_NAME} does not pin {OPTIMIZED_GRAPH}"
        )
    _verify_hashes(directory, optimized.files, trust_record)
    return optimized


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify_files(directory: str, manifest: ModelManifest, *, trust_record: bool = False) -> None:
    """Every pinned file exists and has its pinned hash; raises ModelError otherwise. With
    `trust_record` (loading a model), a file the directory's hash record shows unchanged since
    its hash was last found right is not read again (`hash_record.py`); without it (verify,
    pull, install) every byte is read."""
    _verify_hashes(directory, manifest.files, trust_record)


def _verify_hashes(directory: str, files: dict[str, str], trust_record: bool = False) -> None:
    record = hash_record.read(directory) if trust_record else {}
    changed = False
    for name, expected in files.items():
        if trust_record and hash_record.unchanged(directory, record, name, expected):
            continue
        path = os.path.join(directory, name)
        try:
            actual = sha256_file(path)
            seen = hash_record.identity(path, actual)
        except FileNotFoundError:
            raise ModelError("missing_file", f"{name} is missing from {directory}") from None
        if actual != expected:
            raise ModelError(
                "hash_mismatch", f"{name} has sha256 {actual}, the manifest pins {expected}"
            )
        if hash_record.settled(seen):
            record[name], changed = seen, True
    if changed:
        hash_record.write(directory, {**hash_record.read(directory), **record})


def load_verified(directory: str, *, trust_record: bool = False) -> ModelManifest:
    manifest = read_manifest(directory)
    verify_files(directory, manifest, trust_record=trust_record)
    return manifest
