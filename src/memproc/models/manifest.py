"""The model manifest, `memproc-model.json`, and verification of the files it pins."""

from __future__ import annotations

import hashlib
import os
from typing import Annotated, Literal

import msgspec

MANIFEST_NAME = "memproc-model.json"
REQUIRED_FILES = ("model.onnx", "tokenizer.json")
Sha256 = Annotated[str, msgspec.Meta(pattern="^[0-9a-f]{64}$")]


class ModelError(Exception):
    """A model directory cannot be used. `reason` is a short machine-readable word."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class ModelManifest(msgspec.Struct, forbid_unknown_fields=True, kw_only=True, frozen=True):
    name: Annotated[str, msgspec.Meta(pattern="^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")]
    kind: Literal["embedder", "reranker"]
    pooling: Literal["cls", "mean"] = "cls"
    normalize: bool = True
    dims: Annotated[int, msgspec.Meta(ge=1, le=8192)] | None = None
    max_length: Annotated[int, msgspec.Meta(ge=8, le=8192)] = 512
    query_prefix: str = ""
    document_prefix: str = ""
    files: dict[str, Sha256]
    licence: str
    source: str


def manifest_path(directory: str) -> str:
    return os.path.join(directory, MANIFEST_NAME)


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
    for name in manifest.files:
        if os.path.basename(name) != name or name.startswith("."):
            raise ModelError("bad_manifest", f"file name {name!r} must be a plain file name")


def write_manifest(directory: str, manifest: ModelManifest) -> None:
    data = msgspec.json.format(msgspec.json.encode(manifest), indent=2) + b"\n"
    temporary = manifest_path(directory) + ".tmp"
    with open(temporary, "wb") as handle:
        handle.write(data)
    os.replace(temporary, manifest_path(directory))


def sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def verify_files(directory: str, manifest: ModelManifest) -> None:
    """Every pinned file exists and has its pinned hash; raises ModelError otherwise."""
    for name, expected in manifest.files.items():
        path = os.path.join(directory, name)
        try:
            actual = sha256_file(path)
        except FileNotFoundError:
            raise ModelError("missing_file", f"{name} is missing from {directory}") from None
        if actual != expected:
            raise ModelError(
                "hash_mismatch", f"{name} has sha256 {actual}, the manifest pins {expected}"
            )


def load_verified(directory: str) -> ModelManifest:
    manifest = read_manifest(directory)
    verify_files(directory, manifest)
    return manifest
