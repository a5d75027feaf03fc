"""`memory.search` with `rerank: true`: the cross-encoder reorders, the confidence gate drops.

The reranker is the tiny cross-encoder graph from modelkit (it counts tokens shared by query
and passage; logit = 2 * shared - 3), installed beside the real MiniLM, so every expected
score is worked out independently in numpy from the same tokenizer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from memproc.errors import NotReady
from memproc.runtime import Runtime
from modelkit import build_cross_encoder, shared_token_counts, sigmoid
from searchkit import EMBEDDER, OpenRuntime, ids, opener, remember_all, search, settle

RERANKER = "tiny-ce"
MAX_LENGTH = 64
QUERY = "apple banana smoothie recipe"
DOCS = {
    "repeats": "apple apple apple apple banana banana banana",
    "recipe": "A smoothie recipe with apple and banana.",
    "sauce": "Banana bread with a spoon of apple sauce.",
    "ripe": "Banana bread needs ripe bananas.",
    "trains": "Trains leave the station every hour.",
}


@pytest.fixture
def models_dir(tmp_path: Path, minilm_dir: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    (models / EMBEDDER).symlink_to(minilm_dir, target_is_directory=True)
    build_cross_encoder(
        models / RERANKER, minilm_dir / "tokenizer.json", name=RERANKER, max_length=MAX_LENGTH
    )
    return models


@pytest.fixture
def open_runtime(make_runtime: Callable[..., Runtime], models_dir: Path) -> Iterator[OpenRuntime]:
    yield opener(make_runtime, models_dir)
    settle()


@pytest.fixture
def expected(minilm_dir: Path) -> dict[str, float]:
    """name -> the score the tiny cross-encoder must give that document for QUERY."""
    tokenizer = minilm_dir / "tokenizer.json"
    shared = shared_token_counts(tokenizer, QUERY, list(DOCS.values()), MAX_LENGTH)
    scores = sigmoid(2.0 * shared - 3.0)
    assert len(set(np.round(scores, 6))) == len(DOCS), "distinct scores: the order is defined"
    return dict(zip(DOCS, (float(s) for s in scores), strict=True))


def by_score(expected: dict[str, float], names: list[str] | None = None) -> list[str]:
    return sorted(names or list(expected), key=lambda name: -expected[name])


def test_rerank_orders_by_the_cross_encoders_score(
    open_runtime: OpenRuntime, expected: dict[str, float]
) -> None:
    runtime = open_runtime(reranker=RERANKER)
    memories = remember_all(runtime, DOCS)
    name_of = {memory_id: name for name, memory_id in memories.items()}
    plain = search(runtime, QUERY, limit=len(DOCS))
    reranked = search(runtime, QUERY, limit=len(DOCS), rerank=True)
    assert [name_of[i] for i in ids(reranked)] == by_score(expected)
    assert ids(plain) != ids(reranked), "the reranker changed the fused order"
    for rank, hit in enumerate(reranked.results, start=1):
        assert hit.score == pytest.approx(expected[name_of[hit.id]], abs=1e-5)
        assert hit.ranks.rerank == rank
        assert hit.ranks.fused is not None
    assert all(hit.ranks.rerank is None for hit in plain.results)


def test_rerank_scores_and_ranks_appear_in_the_explanation(
    open_runtime: OpenRuntime, expected: dict[str, float]
) -> None:
    runtime = open_runtime(reranker=RERANKER)
    memories = remember_all(runtime, DOCS)
    result = search(runtime, QUERY, limit=2, rerank=True, explain=True)
    explanation = result.explanation
    assert explanation is not None
    assert explanation.queries.reranker == RERANKER
    assert explanation.counts["reranked"] == len(DOCS)
    by_id = {c.id: c for c in explanation.candidates}
    for name, memory_id in memories.items():
        candidate = by_id[memory_id]
        assert candidate.rerank_score == pytest.approx(expected[name], abs=1e-5)
        assert candidate.final_score == candidate.rerank_score
    ranks = sorted(by_id[memories[name]].rerank_rank or 0 for name in DOCS)
    assert ranks == list(range(1, len(DOCS) + 1))
    top_two = by_score(expected)[:2]
    assert ids(result) == [memories[name] for name in top_two]
    assert {c.id for c in explanation.candidates if c.outcome == "returned"} == set(ids(result))
    assert explanation.counts["outside_limit"] == len(DOCS) - 2


@pytest.mark.parametrize("from_config", [False, True])
def test_min_confidence_drops_low_scorers(
    open_runtime: OpenRuntime, expected: dict[str, float], from_config: bool
) -> None:
    floor = 0.5
    runtime = open_runtime(reranker=RERANKER, **({"min_confidence": floor} if from_config else {}))
    memories = remember_all(runtime, DOCS)
    params: dict[str, float] = {} if from_config else {"min_confidence": floor}
    result = search(runtime, QUERY, limit=10, rerank=True, explain=True, **params)
    low = {name for name, score in expected.items() if score < floor}
    assert low == {"trains"}, "the corpus has exactly one document below the floor"
    assert set(ids(result)) == {memories[name] for name in DOCS if name not in low}
    assert result.explanation is not None
    assert result.explanation.settings["min_confidence"] == floor
    (dropped,) = [c for c in result.explanation.candidates if c.outcome == "below_confidence"]
    assert dropped.id == memories["trains"]
    assert dropped.reason is not None and str(floor) in dropped.reason
    assert result.explanation.counts["below_confidence"] == 1


def test_the_request_floor_overrides_the_configured_one(
    open_runtime: OpenRuntime, expected: dict[str, float]
) -> None:
    runtime = open_runtime(reranker=RERANKER, min_confidence=0.99)
    memories = remember_all(runtime, DOCS)
    strict = search(runtime, QUERY, rerank=True)
    assert set(ids(strict)) == {memories[n] for n, score in expected.items() if score >= 0.99}
    relaxed = search(runtime, QUERY, rerank=True, min_confidence=0.0)
    assert len(relaxed.results) == len(DOCS)


def test_only_the_rerank_pool_is_rescored(
    open_runtime: OpenRuntime, expected: dict[str, float]
) -> None:
    runtime = open_runtime(reranker=RERANKER, rerank_pool=2)
    remember_all(runtime, DOCS)
    plain = search(runtime, QUERY, limit=2)
    result = search(runtime, QUERY, limit=2, rerank=True, explain=True)
    assert result.explanation is not None
    scored = [c for c in result.explanation.candidates if c.rerank_score is not None]
    assert {c.id for c in scored} == set(ids(plain)), "the fused top two, and only they"
    assert set(ids(result)) == set(ids(plain))
    for candidate in result.explanation.candidates:
        if candidate.rerank_score is None:
            assert candidate.outcome == "outside_limit"
            assert candidate.reason == "beyond the rerank pool"


def test_rerank_without_a_reranker_is_not_ready_for_good(open_runtime: OpenRuntime) -> None:
    runtime = open_runtime(reranker="none")
    remember_all(runtime, DOCS)
    with pytest.raises(NotReady) as refused:
        search(runtime, QUERY, rerank=True)
    assert refused.value.is_retryable() is False
    assert len(search(runtime, QUERY).results) == len(DOCS)


def test_rerank_with_a_reranker_that_failed_to_load_is_not_ready_for_good(
    open_runtime: OpenRuntime,
) -> None:
    runtime = open_runtime(reranker="no-such-reranker")
    with pytest.raises(NotReady) as refused:
        search(runtime, QUERY, rerank=True)
    assert refused.value.is_retryable() is False
    assert refused.value.data["component"] == "reranker"
