"""Models on real files: manifest validation, hash checks, MiniLM inference, batching and the
cross-encoder path (with the tiny graph from modelkit.py). Pull, install and the CLI are in
test_model_pull.py."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memproc.models.batching import length_sorted_batches, pad_batch
from memproc.models.embedder import Embedder
from memproc.models.manifest import (
    MANIFEST_NAME,
    ModelError,
    load_verified,
    read_manifest,
    sha256_file,
)
from memproc.models.reranker import Reranker
from modelkit import (
    build_cross_encoder,
    copy_model,
    flip_byte,
    shared_token_counts,
    sigmoid,
    write_raw_manifest,
)

# -- manifests -------------------------------------------------------------------------------


@pytest.fixture
def plain_dir(tmp_path: Path) -> Path:
    """Two files with a manifest pinning them; not a runnable model (manifests only)."""
    directory = tmp_path / "plain"
    directory.mkdir()
    (directory / "model.onnx").write_bytes(b"not really onnx")
    (directory / "tokenizer.json").write_bytes(b"{}")
    write_raw_manifest(directory, manifest_fields(directory))
    return directory


def manifest_fields(directory: Path, **changes: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "name": "plain",
        "kind": "embedder",
        "dims": 8,
        "files": {
            name: sha256_file(str(directory / name)) for name in ("model.onnx", "tokenizer.json")
        },
        "licence": "test-only",
        "source": "tests",
    }
    fields.update(changes)
    return {k: v for k, v in fields.items() if v is not None}


def test_a_valid_manifest_reads_and_verifies(plain_dir: Path) -> None:
    manifest = load_verified(str(plain_dir))
    assert (manifest.name, manifest.kind, manifest.dims) == ("plain", "embedder", 8)
    assert (manifest.pooling, manifest.normalize, manifest.max_length) == ("cls", True, 512)


SHA = "0" * 64


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"files": {"model.onnx": SHA}}, "tokenizer.json"),
        ({"files": {"tokenizer.json": SHA}}, "model.onnx"),
        ({"files": {"model.onnx": SHA, "tokenizer.json": SHA, "../x": SHA}}, "'../x'"),
        ({"files": {"model.onnx": SHA, "tokenizer.json": SHA, "sub/x": SHA}}, "'sub/x'"),
        ({"files": {"model.onnx": SHA, "tokenizer.json": SHA, ".hidden": SHA}}, "'.hidden'"),
        ({"name": "../x"}, "name"),
        ({"name": ""}, "name"),
        ({"dims": None}, "dims"),
        ({"kind": "classifier"}, "kind"),
        ({"pooling": "max"}, "pooling"),
        ({"files": {"model.onnx": "abc", "tokenizer.json": SHA}}, "files"),
        ({"licence": None}, "licence"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_invalid_manifests_are_refused_with_the_reason(
    plain_dir: Path, changes: dict[str, Any], words: str
) -> None:
    write_raw_manifest(plain_dir, manifest_fields(plain_dir, **changes))
    with pytest.raises(ModelError) as caught:
        read_manifest(str(plain_dir))
    assert caught.value.reason == "bad_manifest"
    assert words in str(caught.value)


def test_a_reranker_needs_no_dims(plain_dir: Path) -> None:
    write_raw_manifest(plain_dir, manifest_fields(plain_dir, kind="reranker", dims=None))
    assert read_manifest(str(plain_dir)).dims is None


def test_a_directory_without_a_manifest_is_missing(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        read_manifest(str(tmp_path))
    assert caught.value.reason == "missing"


def test_a_manifest_that_is_not_json_is_refused(plain_dir: Path) -> None:
    (plain_dir / MANIFEST_NAME).write_text("{not json")
    with pytest.raises(ModelError) as caught:
        read_manifest(str(plain_dir))
    assert caught.value.reason == "bad_manifest"


def test_a_pinned_file_missing_from_the_directory_is_refused(plain_dir: Path) -> None:
    (plain_dir / "tokenizer.json").unlink()
    with pytest.raises(ModelError) as caught:
        load_verified(str(plain_dir))
    assert caught.value.reason == "missing_file"
    assert "tokenizer.json" in str(caught.value)


def test_a_changed_file_is_refused_with_hash_mismatch(plain_dir: Path) -> None:
    flip_byte(plain_dir / "tokenizer.json", 0)
    with pytest.raises(ModelError) as caught:
        load_verified(str(plain_dir))
    assert caught.value.reason == "hash_mismatch"


def test_a_corrupted_minilm_is_refused_before_loading(minilm_dir: Path, tmp_path: Path) -> None:
    copy = copy_model(minilm_dir, tmp_path / "minilm")
    Embedder(str(copy))  # the intact copy loads: the refusal below is the flipped byte's doing
    flip_byte(copy / "model.onnx")
    with pytest.raises(ModelError) as caught:
        Embedder(str(copy))
    assert caught.value.reason == "hash_mismatch"
    assert "model.onnx" in str(caught.value)


def test_a_model_of_the_other_kind_is_refused(minilm_dir: Path, tmp_path: Path) -> None:
    reranker_dir = build_cross_encoder(tmp_path / "ce", minilm_dir / "tokenizer.json")
    with pytest.raises(ModelError) as caught:
        Reranker(str(minilm_dir))
    assert caught.value.reason == "wrong_kind"
    with pytest.raises(ModelError) as caught:
        Embedder(str(reranker_dir))
    assert caught.value.reason == "wrong_kind"


def test_a_file_onnxruntime_cannot_load_is_invalid_model(plain_dir: Path) -> None:
    write_raw_manifest(plain_dir, manifest_fields(plain_dir, kind="reranker", dims=None))
    with pytest.raises(ModelError) as caught:
        Reranker(str(plain_dir))
    assert caught.value.reason == "invalid_model"


def test_a_graph_wanting_inputs_a_tokenizer_cannot_give_is_refused(
    minilm_dir: Path, tmp_path: Path
) -> None:
    directory = build_cross_encoder(
        tmp_path / "ce", minilm_dir / "tokenizer.json", extra_input="position_ids"
    )
    with pytest.raises(ModelError) as caught:
        Reranker(str(directory))
    assert caught.value.reason == "invalid_model"
    assert "position_ids" in str(caught.value)


def test_a_manifest_that_lies_about_dims_is_refused(minilm_dir: Path, tmp_path: Path) -> None:
    copy = copy_model(minilm_dir, tmp_path / "minilm", dims=768)
    with pytest.raises(ModelError) as caught:
        Embedder(str(copy))
    assert caught.value.reason == "bad_manifest"
    assert "768" in str(caught.value)


# -- MiniLM inference ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def embedder(minilm_dir: Path) -> Embedder:
    return Embedder(str(minilm_dir), threads=2)


def test_sessions_run_the_copy_optimized_at_pull_time_without_optimizing_again(
    embedder: Embedder, minilm_dir: Path
) -> None:
    """Constant folding off made one short MiniLM call ~10x slower (issue 12): the graph that
    runs is the copy folded once at pull time, so the session's own optimizers are off."""
    import onnxruntime as ort

    from memproc.models.manifest import read_optimized

    options = embedder._session.get_session_options()
    assert options.graph_optimization_level == ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    optimized = read_optimized(str(minilm_dir))
    assert optimized is not None and optimized.level == "extended"
    assert options.intra_op_num_threads == 2
    assert embedder.graph_path == str(minilm_dir / "model.optimized.onnx")


def test_one_session_serves_every_model_loaded_from_the_same_files(
    embedder: Embedder, minilm_dir: Path
) -> None:
    again = Embedder(str(minilm_dir), threads=2)
    assert again._session is embedder._session
    assert Embedder(str(minilm_dir), threads=1)._session is not embedder._session
    np.testing.assert_array_equal(again.embed(["shared"]), embedder.embed(["shared"]))


def test_a_session_is_freed_with_the_last_model_using_it(minilm_dir: Path) -> None:
    import gc
    import weakref

    session = weakref.ref(Embedder(str(minilm_dir), threads=3)._session)
    gc.collect()
    assert session() is None


def test_minilm_rows_are_unit_float32_vectors(embedder: Embedder) -> None:
    texts = ["one", "a somewhat longer sentence about memory services", "ünïcödé ✓ 日本語"]
    rows = embedder.embed(texts)
    assert (embedder.name, embedder.dims) == ("minilm-l6-int8", 384)
    assert rows.shape == (3, 384)
    assert rows.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-5)
    assert embedder.embed([]).shape == (0, 384)


def test_paraphrases_are_closer_than_unrelated_sentences(embedder: Embedder) -> None:
    cat, rug, revenue, deploy, release = embedder.embed(
        [
            "The cat sat on the mat.",
            "A cat was sitting on the rug.",
            "Quarterly revenue grew by ten percent.",
            "How do I deploy the service to production?",
            "Steps for releasing the server to the live environment",
        ]
    )
    assert cat @ rug > cat @ revenue + 0.3
    assert deploy @ release > deploy @ cat + 0.3
    assert deploy @ release > release @ revenue + 0.3


def test_a_text_embeds_the_same_alone_and_padded_in_a_batch(embedder: Embedder) -> None:
    short = "where did I put the deployment notes"
    longer = [
        " ".join(["the build failed because the cache was stale"] * 12),
        " ".join(["memory services keep notes for coding agents"] * 20),
    ]
    lengths = embedder.token_counts([short, *longer])
    assert lengths[0] * 10 < min(lengths[1:])  # so the short text is padded a lot...
    assert list(length_sorted_batches(lengths)) == [[0, 1, 2]]  # ...in one batch with them
    alone = embedder.embed([short])[0]
    batched = embedder.embed([longer[0], short, longer[1]])
    np.testing.assert_allclose(batched[1], alone, atol=1e-5)
    np.testing.assert_allclose(batched[0], embedder.embed([longer[0]])[0], atol=1e-5)


def test_long_texts_are_truncated_at_max_length(embedder: Embedder) -> None:
    words = [f"word{i}" for i in range(10_000)]
    huge = " ".join(words)
    assert embedder.token_counts([huge]) == [embedder.manifest.max_length] == [256]
    vector = embedder.embed([huge])[0]
    assert np.isfinite(vector).all()
    # Both are cut to the same first 256 tokens, so they embed identically.
    np.testing.assert_allclose(vector, embedder.embed([" ".join(words[:1000])])[0], atol=1e-5)


def test_query_and_document_prefixes_come_from_the_manifest(
    minilm_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    copy = copy_model(
        minilm_dir, tmp_path / "prefixed", query_prefix="query: ", document_prefix="passage: "
    )
    prefixed = Embedder(str(copy))
    text = "the release checklist"
    query, document = prefixed.embed_queries([text])[0], prefixed.embed_documents([text])[0]
    np.testing.assert_allclose(query, embedder.embed(["query: " + text])[0], atol=1e-5)
    np.testing.assert_allclose(document, embedder.embed(["passage: " + text])[0], atol=1e-5)
    assert not np.allclose(query, document, atol=1e-3)
    # Without prefixes in the manifest, all three are the same vector.
    plain = embedder.embed([text])[0]
    np.testing.assert_allclose(embedder.embed_queries([text])[0], plain, atol=1e-6)
    np.testing.assert_allclose(embedder.embed_documents([text])[0], plain, atol=1e-6)


def test_pooling_comes_from_the_manifest(
    minilm_dir: Path, tmp_path: Path, embedder: Embedder
) -> None:
    cls = Embedder(str(copy_model(minilm_dir, tmp_path / "cls", pooling="cls")))
    texts = ["pooling decides the vector", "another sentence"]
    cls_rows, mean_rows = cls.embed(texts), embedder.embed(texts)
    np.testing.assert_allclose(np.linalg.norm(cls_rows, axis=1), 1.0, atol=1e-5)
    assert np.abs(cls_rows - mean_rows).max() > 0.05


def test_normalize_off_keeps_the_raw_pooled_length(minilm_dir: Path, tmp_path: Path) -> None:
    raw = Embedder(str(copy_model(minilm_dir, tmp_path / "raw", normalize=False)))
    norms = np.linalg.norm(raw.embed(["not normalised", "neither is this one"]), axis=1)
    assert (np.abs(norms - 1.0) > 0.01).all()


# -- batching --------------------------------------------------------------------------------


@settings(deadline=None, max_examples=200)
@given(
    lengths=st.lists(st.integers(1, 600), max_size=300),
    max_items=st.integers(1, 70),
    max_tokens=st.integers(1, 9000),
)
def test_batches_hold_every_index_once_within_both_bounds(
    lengths: list[int], max_items: int, max_tokens: int
) -> None:
    batches = list(length_sorted_batches(lengths, max_items, max_tokens))
    flat = [index for batch in batches for index in batch]
    assert sorted(flat) == list(range(len(lengths)))
    assert all(batch for batch in batches)
    for batch in batches:
        assert len(batch) <= max_items
        longest = max(lengths[i] for i in batch)
        assert len(batch) == 1 or longest * len(batch) <= max_tokens
    ordered = [lengths[i] for i in flat]
    assert ordered == sorted(ordered)


@given(lengths=st.lists(st.integers(1, 50), min_size=1, max_size=100))
def test_batches_are_full_when_the_bounds_allow(lengths: list[int]) -> None:
    assert list(length_sorted_batches(lengths, max_items=1000, max_tokens=10**9)) == [
        sorted(range(len(lengths)), key=lengths.__getitem__)
    ]


def fake_encoding(ids: list[int], types: list[int]) -> Any:
    return SimpleNamespace(ids=ids, attention_mask=[1] * len(ids), type_ids=types)


@given(
    rows=st.lists(
        st.lists(st.tuples(st.integers(1, 30_000), st.integers(0, 1)), min_size=1, max_size=40),
        min_size=1,
        max_size=20,
    )
)
def test_pad_batch_pads_each_row_to_the_longest_with_zeros(
    rows: list[list[tuple[int, int]]],
) -> None:
    encodings = [fake_encoding([i for i, _ in row], [t for _, t in row]) for row in rows]
    padded = pad_batch(encodings)
    width = max(len(row) for row in rows)
    assert set(padded) == {"input_ids", "attention_mask", "token_type_ids"}
    for array in padded.values():
        assert array.shape == (len(rows), width)
        assert array.dtype == np.int64
    for r, row in enumerate(rows):
        size = len(row)
        assert padded["input_ids"][r, :size].tolist() == [i for i, _ in row]
        assert padded["token_type_ids"][r, :size].tolist() == [t for _, t in row]
        assert padded["attention_mask"][r].tolist() == [1] * size + [0] * (width - size)
        assert not padded["input_ids"][r, size:].any()
        assert not padded["token_type_ids"][r, size:].any()


# -- the cross-encoder path ------------------------------------------------------------------

QUERY = "where does the cat sleep at night"
PASSAGES = [
    "the cat sleeps on the sofa at night",
    "stock prices fell sharply after the quarterly announcement",
    "cat",
    " ".join(["an unrelated passage about compilers and linkers"] * 6),
    "where does the dog sleep",
]


def test_reranker_scores_are_sigmoid_of_the_logits_in_passage_order(
    minilm_dir: Path, tmp_path: Path
) -> None:
    tokenizer = minilm_dir / "tokenizer.json"
    reranker = Reranker(str(build_cross_encoder(tmp_path / "ce", tokenizer)))
    scores = reranker.score(QUERY, PASSAGES)
    shared = shared_token_counts(tokenizer, QUERY, PASSAGES, max_length=64)
    assert len(set(shared.tolist())) >= 4  # distinct expected scores, so a reorder would show
    assert reranker.name == "tiny-ce"
    assert scores.dtype == np.float32
    assert ((scores > 0) & (scores < 1)).all()
    np.testing.assert_allclose(scores, sigmoid(2 * shared - 3), atol=1e-6)


def test_a_passage_sharing_words_with_the_query_scores_higher(
    minilm_dir: Path, tmp_path: Path
) -> None:
    reranker = Reranker(str(build_cross_encoder(tmp_path / "ce", minilm_dir / "tokenizer.json")))
    related, unrelated = reranker.score("deploy the memory service", ["deploy memory", "bananas"])
    assert related > unrelated


def test_a_two_class_head_scores_the_softmax_of_the_relevant_class(
    minilm_dir: Path, tmp_path: Path
) -> None:
    tokenizer = minilm_dir / "tokenizer.json"
    directory = build_cross_encoder(tmp_path / "ce2", tokenizer, two_class=True)
    scores = Reranker(str(directory)).score(QUERY, PASSAGES)
    shared = shared_token_counts(tokenizer, QUERY, PASSAGES, max_length=64)
    logits = np.stack([1 - 0.5 * shared, shared], axis=1)
    softmax = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    np.testing.assert_allclose(scores, softmax[:, 1], atol=1e-6)


def test_long_passages_are_truncated_and_the_query_kept(minilm_dir: Path, tmp_path: Path) -> None:
    tokenizer = minilm_dir / "tokenizer.json"
    reranker = Reranker(str(build_cross_encoder(tmp_path / "ce", tokenizer, max_length=16)))
    passages = ["cat " * 5000, "the " + "dog " * 5000]
    scores = reranker.score("cat sleep", passages)
    shared = shared_token_counts(tokenizer, "cat sleep", passages, max_length=16)
    # [CLS] cat sleep [SEP] leaves 12 passage tokens, the last a [SEP]: 11 cats and the [SEP].
    assert shared.tolist() == [12.0, 1.0]
    np.testing.assert_allclose(scores, sigmoid(2 * shared - 3), atol=1e-6)


def test_no_passages_no_scores(minilm_dir: Path, tmp_path: Path) -> None:
    reranker = Reranker(str(build_cross_encoder(tmp_path / "ce", minilm_dir / "tokenizer.json")))
    assert reranker.score("anything", []).shape == (0,)
