"""Model directories for tests: copies of MiniLM with a changed manifest, corruption, and a tiny
cross-encoder graph whose scores a test can compute by hand.

The cross-encoder counts shared tokens: for each pair it sums, over every (query token,
passage token) pair, 1 if the two ids are equal. Segments come from token_type_ids (0 = query,
1 = passage) and padding is excluded by attention_mask, so a wrong mask, wrong segments or a
row written back to the wrong passage all change the score. [SEP] closes both segments, so the
count is at least 1.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import msgspec
import numpy as np
from tokenizers import Tokenizer

from memproc.models.manifest import (
    MANIFEST_NAME,
    ModelManifest,
    read_manifest,
    sha256_file,
    write_manifest,
)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def copy_model(source: Path, dest: Path, **changes: Any) -> Path:
    """A copy of a model directory with manifest fields changed and the files re-hashed."""
    dest.mkdir(parents=True)
    manifest = read_manifest(str(source))
    for name in manifest.files:
        shutil.copyfile(source / name, dest / name)
    seal(dest, msgspec.structs.replace(manifest, **changes))
    return dest


def seal(directory: Path, manifest: ModelManifest) -> ModelManifest:
    """Write `manifest` into `directory` with the sha256 of every file it pins, as they are now."""
    hashes = {name: sha256_file(str(directory / name)) for name in manifest.files}
    sealed = msgspec.structs.replace(manifest, files=hashes)
    write_manifest(str(directory), sealed)
    return sealed


def flip_byte(path: Path, offset: int | None = None) -> None:
    """Invert one byte (the middle one by default) in place."""
    data = bytearray(path.read_bytes())
    index = len(data) // 2 if offset is None else offset
    data[index] ^= 0xFF
    path.write_bytes(bytes(data))


def write_raw_manifest(directory: Path, fields: dict[str, Any]) -> None:
    """A manifest exactly as given, bypassing ModelManifest (for invalid ones)."""
    (directory / MANIFEST_NAME).write_bytes(msgspec.json.encode(fields))


# -- the tiny cross-encoder ------------------------------------------------------------------


def cross_encoder_bytes(*, two_class: bool = False, extra_input: str | None = None) -> bytes:
    """An ONNX graph: (input_ids, attention_mask, token_type_ids) [batch, seq] -> logits.

    One-class head: logits [batch, 1] = 2 * shared - 3. Two-class head: logits [batch, 2] =
    (1 - 0.5 * shared, shared), whose softmax "relevant" probability is sigmoid(1.5 * shared - 1).
    """
    from onnx import TensorProto, helper

    def const(name: str, value: Any, dtype: Any = np.float32) -> Any:
        array = np.asarray(value, dtype=dtype)
        return helper.make_node(
            "Constant",
            [],
            [name],
            value=helper.make_tensor(
                name + "_t",
                TensorProto.FLOAT if dtype == np.float32 else TensorProto.INT64,
                array.shape,
                array.flatten().tolist(),
            ),
        )

    nodes = [
        const("one", 1.0),
        const("ax1", [1], np.int64),
        const("ax2", [2], np.int64),
        const("ax12", [1, 2], np.int64),
        helper.make_node("Cast", ["attention_mask"], ["mask"], to=TensorProto.FLOAT),
        helper.make_node("Cast", ["token_type_ids"], ["passage"], to=TensorProto.FLOAT),
        helper.make_node("Sub", ["one", "passage"], ["query"]),
        helper.make_node("Mul", ["mask", "query"], ["q_w"]),
        helper.make_node("Mul", ["mask", "passage"], ["p_w"]),
        helper.make_node("Unsqueeze", ["q_w", "ax2"], ["q_col"]),
        helper.make_node("Unsqueeze", ["p_w", "ax1"], ["p_row"]),
        helper.make_node("Mul", ["q_col", "p_row"], ["pair_w"]),
        helper.make_node("Unsqueeze", ["input_ids", "ax2"], ["ids_col"]),
        helper.make_node("Unsqueeze", ["input_ids", "ax1"], ["ids_row"]),
        helper.make_node("Equal", ["ids_col", "ids_row"], ["same_b"]),
        helper.make_node("Cast", ["same_b"], ["same"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["same", "pair_w"], ["shared_pairs"]),
        helper.make_node("ReduceSum", ["shared_pairs", "ax12"], ["shared"], keepdims=0),
        helper.make_node("Unsqueeze", ["shared", "ax1"], ["shared_col"]),
    ]
    nodes += _two_class_head() if two_class else _one_class_head()
    batch_seq = ["batch", "seq"]
    inputs = [helper.make_tensor_value_info(n, TensorProto.INT64, batch_seq) for n in INPUTS]
    if extra_input is not None:
        inputs.append(helper.make_tensor_value_info(extra_input, TensorProto.INT64, batch_seq))
    width = 2 if two_class else 1
    output = helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", width])
    graph = helper.make_graph(nodes, "tiny_cross_encoder", inputs, [output])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return bytes(model.SerializeToString())


def _one_class_head() -> list[Any]:
    from onnx import helper

    return [
        helper.make_node("Constant", [], ["two"], value_float=2.0),
        helper.make_node("Constant", [], ["three"], value_float=3.0),
        helper.make_node("Mul", ["shared_col", "two"], ["scaled"]),
        helper.make_node("Sub", ["scaled", "three"], ["logits"]),
    ]


def _two_class_head() -> list[Any]:
    from onnx import helper

    return [
        helper.make_node("Constant", [], ["half"], value_float=0.5),
        helper.make_node("Mul", ["shared_col", "half"], ["half_shared"]),
        helper.make_node("Sub", ["one", "half_shared"], ["irrelevant"]),
        helper.make_node("Concat", ["irrelevant", "shared_col"], ["logits"], axis=1),
    ]


def build_cross_encoder(
    directory: Path,
    tokenizer_json: Path,
    *,
    name: str = "tiny-ce",
    two_class: bool = False,
    max_length: int = 64,
    extra_input: str | None = None,
) -> Path:
    """A complete reranker model directory (graph, MiniLM's tokenizer, sealed manifest)."""
    directory.mkdir(parents=True)
    graph = cross_encoder_bytes(two_class=two_class, extra_input=extra_input)
    (directory / "model.onnx").write_bytes(graph)
    shutil.copyfile(tokenizer_json, directory / "tokenizer.json")
    placeholder = "0" * 64
    manifest = ModelManifest(
        name=name,
        kind="reranker",
        max_length=max_length,
        files={"model.onnx": placeholder, "tokenizer.json": placeholder},
        licence="test-only",
        source="tests/modelkit.py",
    )
    seal(directory, manifest)
    return directory


def shared_token_counts(
    tokenizer_json: Path, query: str, passages: list[str], max_length: int
) -> np.ndarray:
    """What the tiny cross-encoder computes, worked out in numpy from an independent tokenizer."""
    tokenizer = Tokenizer.from_file(str(tokenizer_json))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length, strategy="only_second")
    counts = []
    for passage in passages:
        encoding = tokenizer.encode(query, passage)
        ids = np.asarray(encoding.ids)
        types = np.asarray(encoding.type_ids)
        counts.append(int((ids[types == 0][:, None] == ids[types == 1][None, :]).sum()))
    return np.asarray(counts, dtype=np.float64)


def sigmoid(x: np.ndarray) -> np.ndarray:
    return np.asarray(1.0 / (1.0 + np.exp(-x)))
