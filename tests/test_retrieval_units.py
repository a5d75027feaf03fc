"""The pure parts of retrieval: reciprocal-rank fusion, boosts, time parsing and chunking.

Chunking is checked twice: against a fake token counter that truncates at the cap exactly as
the embedder's tokenizer does (so a count that reaches the cap means "does not fit"), and
against MiniLM's real tokenizer on a long text.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memproc.models.embedder import Embedder
from memproc.retrieval.boosts import BoostWeights, boost_factor, parse_time, recency
from memproc.retrieval.chunking import MIN_WINDOW_WORDS, chunk_text
from memproc.retrieval.fusion import group_totals, reciprocal_rank_fusion, zscore_fusion
from memproc.retrieval.pipeline import Candidate, SearchPlan, fuse_and_boost
from memproc.store import MemoryRecord

# -- reciprocal-rank fusion ----------------------------------------------------------------


def ranking() -> st.SearchStrategy[list[int]]:
    return st.lists(st.integers(0, 40), unique=True, max_size=25)


rankings = st.dictionaries(st.text("abcdef", min_size=1, max_size=3), ranking(), max_size=4)
k_values = st.integers(1, 500)


def test_fusion_sums_one_over_k_plus_rank_per_ranking() -> None:
    """An item a channel did not return counts as ranked just below that channel's list."""
    fused = reciprocal_rank_fusion({"lexical": [7, 8], "dense": [8, 9]}, k=60)
    assert fused == pytest.approx({7: 1 / 61 + 1 / 63, 8: 1 / 62 + 1 / 61, 9: 1 / 62 + 1 / 63})


def test_an_empty_channel_adds_nothing() -> None:
    assert reciprocal_rank_fusion({"lexical": [], "dense": [4, 5]}, k=60) == pytest.approx(
        {4: 1 / 61, 5: 1 / 62}
    )


def test_a_clear_first_place_in_one_channel_beats_middling_agreement() -> None:
    """First in dense, missing from the lexical top 20 (a paraphrase), against an item 10th in
    both: the paraphrase wins, as it would not if a missing item scored nothing there."""
    lexical = [*range(100, 109), 1, *range(110, 120)]
    dense = [2, *range(200, 208), 1, *range(210, 220)]
    fused = reciprocal_rank_fusion({"lexical": lexical, "dense": dense}, k=60)
    assert fused[2] > fused[1]


def test_zscore_standardises_each_channel_and_sums() -> None:
    """bm25 in the tens and cosines below one share nothing but their own spread."""
    fused = zscore_fusion({"lexical": {1: 30.0, 2: 10.0}, "dense": {1: 0.2, 2: 0.6}})
    assert fused == pytest.approx({1: 0.0, 2: 0.0})
    fused = zscore_fusion({"lexical": {1: 30.0, 2: 10.0, 3: 20.0}, "dense": {1: 0.5, 3: 0.5}})
    assert fused[1] > fused[3] > fused[2]


def test_zscore_counts_a_missing_candidate_as_the_channels_lowest() -> None:
    fused = zscore_fusion({"lexical": {1: 3.0, 2: 1.0}, "dense": {3: 0.9, 1: 0.1}})
    assert fused[2] == pytest.approx(-2.0)  # -1 in lexical, and dense's floor of -1


def test_zscore_a_channel_that_cannot_tell_candidates_apart_adds_nothing() -> None:
    lexical = {1: 5.0, 2: 3.0, 3: 1.0}
    fused = zscore_fusion({"lexical": lexical, "time": dict.fromkeys(lexical, 1.0)})
    assert fused == pytest.approx(zscore_fusion({"lexical": lexical}))


def test_zscore_keeps_a_clear_winner_that_rank_fusion_outvotes() -> None:
    """Far ahead in lexical and absent from dense, against a candidate second in both: ranks
    see one first place against two seconds; standardised scores see the gap."""
    lexical = {1: 40.0, 2: 8.0, 3: 7.5, 4: 7.0, 5: 6.5}
    dense = {2: 0.61, 6: 0.62, 3: 0.55, 4: 0.54, 5: 0.53}
    ranks = {name: sorted(ch, key=lambda i: -ch[i]) for name, ch in (("l", lexical), ("d", dense))}
    by_rank = reciprocal_rank_fusion(ranks, k=60)
    assert by_rank[2] > by_rank[1]
    by_score = zscore_fusion({"lexical": lexical, "dense": dense})
    assert by_score[1] > by_score[2]


@given(rankings)
def test_zscore_within_one_channel_keeps_its_order(channels: dict[str, list[int]]) -> None:
    for items in channels.values():
        scores = {item: float(len(items) - i) for i, item in enumerate(items)}
        fused = zscore_fusion({"only": scores})
        assert sorted(fused, key=lambda i: -fused[i]) == items


def test_group_totals_sum_each_groups_scores_for_every_member() -> None:
    groups = {1: "a", 2: "a", 3: "b", 4: "a"}
    totals = group_totals(groups, {1: 0.5, 2: 0.25, 3: 1.0})
    assert totals == {1: 0.75, 2: 0.75, 3: 1.0, 4: 0.75}
    assert group_totals({}, {1: 1.0}) == {}


def test_fusion_of_nothing_is_empty() -> None:
    assert reciprocal_rank_fusion({}, k=60) == {}
    assert reciprocal_rank_fusion({"lexical": [], "dense": []}, k=60) == {}


@given(rankings, k_values, st.integers(1000, 1010))
def test_an_item_first_in_every_ranking_has_the_top_score(
    found: dict[str, list[int]], k: int, champion: int
) -> None:
    placed = {name: [champion, *items] for name, items in found.items()} or {"only": [champion]}
    fused = reciprocal_rank_fusion(placed, k)
    others = [score for item, score in fused.items() if item != champion]
    assert all(fused[champion] > score for score in others)


@given(rankings, ranking(), k_values)
def test_adding_a_ranking_never_lowers_a_score(
    found: dict[str, list[int]], extra: list[int], k: int
) -> None:
    before = reciprocal_rank_fusion(found, k)
    after = reciprocal_rank_fusion({**found, "extra-channel": extra}, k)
    assert set(before) <= set(after)
    for item, score in before.items():
        assert after[item] >= score
    for item in extra:
        assert after[item] > before.get(item, 0.0)


@given(rankings, k_values)
def test_scores_are_positive_and_bounded_by_one_over_k_plus_one_per_ranking(
    found: dict[str, list[int]], k: int
) -> None:
    fused = reciprocal_rank_fusion(found, k)
    assert set(fused) == {item for items in found.values() for item in items}
    for score in fused.values():
        assert 0 < score <= len(found) / (k + 1) + 1e-12


@given(ranking(), st.integers(1, 200), st.integers(1, 200))
def test_within_one_ranking_order_is_kept_whatever_k(items: list[int], k1: int, k2: int) -> None:
    for k in (k1, k2):
        fused = reciprocal_rank_fusion({"only": items}, k)
        assert sorted(fused, key=lambda item: -fused[item]) == items


def test_k_damps_the_top_ranks_so_agreement_wins() -> None:
    """An item 10th in both channels against one 1st in a single channel: with k=60 the
    agreement counts for more; with k=1 the lone first place wins."""
    both = {"lexical": [*range(100, 109), 1, 2], "dense": [*range(200, 209), 1, *range(300, 390)]}
    damped = reciprocal_rank_fusion(both, k=60)
    sharp = reciprocal_rank_fusion(both, k=1)
    assert damped[1] > damped[100]
    assert sharp[1] < sharp[100]


@given(st.integers(1, 1000), st.integers(1, 1000))
def test_a_larger_k_narrows_the_gap_between_first_and_second(k_small: int, k_large: int) -> None:
    if k_small > k_large:
        k_small, k_large = k_large, k_small
    small = reciprocal_rank_fusion({"only": [1, 2]}, k_small)
    large = reciprocal_rank_fusion({"only": [1, 2]}, k_large)
    assert small[1] / small[2] >= large[1] / large[2] > 1.0


# -- boosts ------------------------------------------------------------------------------------

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
ages = st.floats(0, 3650, allow_nan=False)
half_lives = st.floats(0.5, 365, allow_nan=False)


@given(ages, ages, half_lives)
def test_recency_falls_with_age(age_a: float, age_b: float, half_life: float) -> None:
    young, old = sorted((age_a, age_b))
    assert recency(NOW - timedelta(days=young), NOW, half_life) >= recency(
        NOW - timedelta(days=old), NOW, half_life
    )


@given(half_lives, st.floats(0, 10, allow_nan=False))
def test_recency_halves_every_half_life(half_life: float, periods: float) -> None:
    when = NOW - timedelta(days=half_life * periods)
    assert recency(when, NOW, half_life) == pytest.approx(0.5**periods, rel=1e-6, abs=1e-12)


def test_recency_is_one_now_and_in_the_future() -> None:
    assert recency(NOW, NOW, 30) == 1.0
    assert recency(NOW + timedelta(days=400), NOW, 30) == 1.0
    assert recency(NOW - timedelta(days=30), NOW, 30) == pytest.approx(0.5)
    assert recency(NOW - timedelta(days=60), NOW, 30) == pytest.approx(0.25)


@given(ages, st.floats(0, 1), st.integers(0, 10_000))
def test_with_zero_weights_the_boost_is_exactly_one(
    age: float, importance: float, uses: int
) -> None:
    factor = boost_factor(
        when=NOW - timedelta(days=age),
        now=NOW,
        importance=importance,
        uses=uses,
        weights=BoostWeights(),
    )
    assert factor == 1.0
    assert not BoostWeights().active


def boost(*, age: float = 0.0, worth: float = 0.5, uses: int = 0, **weights: float) -> float:
    """boost_factor for a memory `age` days old of importance `worth`, with these weights."""
    return boost_factor(
        when=NOW - timedelta(days=age),
        now=NOW,
        importance=worth,
        uses=uses,
        weights=BoostWeights(**weights),
    )


@given(ages, ages, st.floats(0.01, 10))
def test_with_a_recency_weight_older_never_scores_higher(
    age_a: float, age_b: float, weight: float
) -> None:
    young, old = sorted((age_a, age_b))
    assert boost(age=young, recency=weight) >= boost(age=old, recency=weight)


def test_recency_weight_adds_weight_times_recency() -> None:
    assert boost(age=0, recency=2.0) == pytest.approx(3.0)
    assert boost(age=30, recency=2.0, half_life_days=30) == pytest.approx(2.0)


@given(st.floats(0, 1), st.floats(0, 1), st.floats(0.01, 10))
def test_importance_weight_orders_by_importance(low: float, high: float, weight: float) -> None:
    low, high = sorted((low, high))
    assert boost(worth=low, importance=weight) <= boost(worth=high, importance=weight)


def test_importance_is_centred_on_one_half() -> None:
    assert boost(worth=0.5, importance=4.0) == 1.0
    assert boost(worth=1.0, importance=1.0) == pytest.approx(1.5)


@given(st.integers(0, 10_000), st.integers(0, 10_000), st.floats(0.01, 10))
def test_more_use_never_lowers_the_boost(uses_a: int, uses_b: int, weight: float) -> None:
    fewer, more = sorted((uses_a, uses_b))
    assert boost(uses=fewer, access=weight) <= boost(uses=more, access=weight)
    assert boost(uses=more, access=weight) < 1.0 + weight  # saturates below the weight


def test_the_boost_is_never_negative() -> None:
    assert boost(worth=0.0, importance=10.0) == 0.0


# -- parse_time ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-11-30T07:01:39Z", datetime(2026, 11, 30, 7, 1, 39, tzinfo=UTC)),
        ("2026-11-30T07:01:39z", datetime(2026, 11, 30, 7, 1, 39, tzinfo=UTC)),
        ("2026-11-30T07:01:39.250Z", datetime(2026, 11, 30, 7, 1, 39, 250_000, tzinfo=UTC)),
        ("2026-11-30T09:01:39+02:00", datetime(2026, 11, 30, 7, 1, 39, tzinfo=UTC)),
        ("2026-11-30T02:01:39-05:00", datetime(2026, 11, 30, 7, 1, 39, tzinfo=UTC)),
        ("2026-11-30", datetime(2026, 11, 30, tzinfo=UTC)),
        ("2026-11-30T07:01:39", datetime(2026, 11, 30, 7, 1, 39, tzinfo=UTC)),
    ],
)
def test_parse_time_gives_an_aware_moment(text: str, expected: datetime) -> None:
    parsed = parse_time(text)
    assert parsed.tzinfo is not None
    assert parsed == expected


def test_parse_time_keeps_the_offset_it_was_given() -> None:
    assert parse_time("2026-11-30T09:01:39+02:00").utcoffset() == timedelta(hours=2)
    assert parse_time("2026-11-30T09:01:39+02:00").tzinfo == timezone(timedelta(hours=2))


def test_parse_time_refuses_garbage() -> None:
    with pytest.raises(ValueError):
        parse_time("yesterday")


# -- chunking with a truncating fake tokenizer ------------------------------------------------


class TruncatingCounter:
    """Tokens of a text as a wordpiece tokenizer would count them ([CLS] + pieces + [SEP]),
    capped at `cap` the way a tokenizer with truncation on caps them. A word's pieces are
    `1 + len(word) // 6`, so long words cost more, as they do in a real vocabulary."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.calls = 0

    @staticmethod
    def true_count(text: str) -> int:
        return 2 + sum(1 + len(word) // 6 for word in text.split())

    def __call__(self, texts: Sequence[str]) -> list[int]:
        self.calls += 1
        return [min(self.true_count(text), self.cap) for text in texts]


def unique_words(lengths: Sequence[int]) -> list[str]:
    """Distinct words (a running number in each) of roughly the given lengths."""
    return [f"w{i}" + "x" * max(0, length - len(f"w{i}")) for i, length in enumerate(lengths)]


def window_spans(text: str, windows: Sequence[str]) -> list[tuple[int, int]]:
    """Where each window sits in `text`, assuming windows advance (which the checks verify)."""
    spans, start = [], -1
    for window in windows:
        start = text.find(window, start + 1)
        assert start >= 0, f"window is not a contiguous piece of the text: {window[:80]!r}"
        spans.append((start, start + len(window)))
    return spans


def assert_cover_with_overlap(text: str, windows: Sequence[str]) -> None:
    """Windows cut at word boundaries, start at the first word, end at the last, and each
    overlaps the next by at least one whole word, so every word is in some window."""
    boundaries_start = {m.start() for m in re.finditer(r"\S+", text)}
    boundaries_end = {m.end() for m in re.finditer(r"\S+", text)}
    spans = window_spans(text, windows)
    assert spans[0][0] == min(boundaries_start)
    assert spans[-1][1] == max(boundaries_end)
    for start, end in spans:
        assert start in boundaries_start and end in boundaries_end
    for (start, end), (next_start, next_end) in itertools.pairwise(spans):
        assert start < next_start < end < next_end  # advances, and overlaps
        assert text[next_start:end].split(), "the overlap holds at least one word"


@given(
    word_lengths=st.lists(st.integers(1, 20), min_size=1, max_size=1500),
    cap=st.integers(8 * 5 + 3, 600),
)
@settings(max_examples=150, deadline=None)
def test_windows_fit_cover_every_word_and_overlap(word_lengths: list[int], cap: int) -> None:
    text = " ".join(unique_words(word_lengths))
    counter = TruncatingCounter(cap)
    windows = chunk_text(text, cap, counter)
    if counter.true_count(text) < cap:
        assert windows == [text]
        return
    assert len(windows) >= 2 or len(word_lengths) == 1
    for window in windows:
        assert counter.true_count(window) < cap, "a window the tokenizer would truncate"
    if len(windows) > 1:
        assert_cover_with_overlap(text, windows)
    words_seen = {word for window in windows for word in window.split()}
    assert words_seen == set(text.split())


def test_short_text_comes_back_unchanged_with_its_spacing() -> None:
    text = "  a short\tnote\n with  odd spacing "
    assert chunk_text(text, 256, TruncatingCounter(256)) == [text]


def test_a_text_whose_count_reaches_the_cap_is_split() -> None:
    """A capped count equal to max_tokens is read as "truncated", never as an exact fit."""
    cap = 50
    words = unique_words([2] * 48)  # 2 + 48 tokens: exactly the cap
    text = " ".join(words)
    assert TruncatingCounter.true_count(text) == cap
    windows = chunk_text(text, cap, TruncatingCounter(cap))
    assert len(windows) > 1
    assert all(TruncatingCounter.true_count(window) < cap for window in windows)


def test_one_enormous_word_is_left_whole() -> None:
    text = "x" * 10_000
    assert chunk_text(text, 16, TruncatingCounter(16)) == [text]


def test_a_probe_that_is_itself_truncated_still_leads_to_windows_that_fit() -> None:
    """Words so long that the first 64 of them overflow the cap: the first guess cannot come
    from the probe, and the loop must shrink windows until they fit."""
    cap = 8 * 5 + 3  # room for MIN_WINDOW_WORDS words of 5 pieces each
    text = " ".join(unique_words([24] * 300))
    counter = TruncatingCounter(cap)
    windows = chunk_text(text, cap, counter)
    assert all(counter.true_count(window) < cap for window in windows)
    assert all(len(window.split()) >= MIN_WINDOW_WORDS for window in windows[:-1])
    assert_cover_with_overlap(text, windows)


# -- chunking with MiniLM's own tokenizer -------------------------------------------------------

TOPICS = (
    "gardening",
    "compilers",
    "sailing",
    "bread baking",
    "tax returns",
    "migratory birds",
    "database indexes",
    "violin practice",
)


def long_text(words: int) -> str:
    """Sentences of five words, each with a running number so every window is unique."""
    sentences = [f"note {i} mentions {TOPICS[i % len(TOPICS)]}." for i in range(words // 4)]
    text = " ".join(sentences)
    return " ".join(text.split()[:words])


@pytest.fixture(scope="module")
def embedder(minilm_dir: Path) -> Embedder:
    return Embedder(str(minilm_dir), threads=1)


def test_real_tokenizer_windows_fit_and_cover_a_5000_word_text(embedder: Embedder) -> None:
    text = long_text(5000)
    assert len(text.split()) == 5000
    max_tokens = embedder.manifest.max_length
    assert embedder.token_counts([text]) == [max_tokens]  # the tokenizer itself truncates
    windows = chunk_text(text, max_tokens, embedder.token_counts)
    counts = embedder.token_counts(windows)
    assert max(counts) < max_tokens, "every window fits without truncation"
    assert_cover_with_overlap(text, windows)
    untruncated_tokens = sum(counts) - 2 * len(windows)
    assert len(windows) >= math.ceil(untruncated_tokens / max_tokens)
    # Windows are not needlessly small: the guess aims near the cap.
    assert sum(counts) / len(counts) > max_tokens / 2


def test_real_tokenizer_short_text_is_one_chunk(embedder: Embedder) -> None:
    text = "The deploy pipeline pushes images after the tests pass."
    assert chunk_text(text, embedder.manifest.max_length, embedder.token_counts) == [text]


# -- the head of the fused list does not depend on how deep the channels gathered -------------


def _candidates(lexical: list[int], dense: list[int], cut: int | None) -> dict[int, Candidate]:
    """Candidates as the gatherer leaves them, each channel's list cut at `cut` if given."""
    out: dict[int, Candidate] = {}
    for attribute, ranking in (("lexical", lexical), ("dense", dense)):
        for rank, seq in enumerate(ranking[:cut] if cut else ranking, start=1):
            record = MemoryRecord(
                seq=seq, id=f"m{seq}", scope="s", kind="note", content="x", tags=[],
                metadata={}, source={}, importance=0.5, status="active",
                created_at="2026-01-01T00:00:00Z", updated_at="2026-01-01T00:00:00Z",
            )  # fmt: skip
            candidate = out.setdefault(seq, Candidate(record=record))
            setattr(candidate, f"{attribute}_rank", rank)
            score = 100.0 - rank if attribute == "lexical" else 1.0 - rank / 100
            setattr(
                candidate, "lexical_score" if attribute == "lexical" else "dense_similarity", score
            )
    return out


def _plan(fusion: str, pool: int, depth: int, rrf_k: int) -> SearchPlan:
    return SearchPlan(
        scopes=["s"], kinds=None, limit=pool, lexical_match="x", query_vector=b"x",
        embedder=None, dense_cache=None, rrf_k=rrf_k, pool=pool, rerank_pool=pool,
        min_confidence=0.0, weights=BoostWeights(), now=datetime(2026, 1, 2, tzinfo=UTC),
        fusion=fusion, depth=depth,
    )  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(
    st.permutations(list(range(1, 41))),
    st.permutations(list(range(1, 41))),
    st.sampled_from(["rrf", "zscore"]),
    st.integers(1, 60),
)
def test_the_head_is_the_same_whether_channels_gathered_deep_or_not(
    lexical: list[int], dense: list[int], fusion: str, rrf_k: int
) -> None:
    depth = 10
    deep = fuse_and_boost(_candidates(lexical, dense, None), _plan(fusion, 40, depth, rrf_k))
    shallow = fuse_and_boost(_candidates(lexical, dense, depth), _plan(fusion, 10, depth, rrf_k))
    head = [c.record.seq for c in shallow]
    assert [c.record.seq for c in deep][: len(head)] == head
    assert len(deep) == 40


def test_fusing_deep_lists_whole_would_reorder_the_head() -> None:
    """The case the split exists for: first in lexical but 40th in dense, against 2nd and 4th."""
    lexical = [1, 2, *range(3, 41)]
    dense = [5, 6, 7, 2, *range(8, 41), 3, 4, 1]
    deep = fuse_and_boost(_candidates(lexical, dense, None), _plan("rrf", 40, 40, 1))
    split = fuse_and_boost(_candidates(lexical, dense, None), _plan("rrf", 40, 10, 1))
    order = [c.record.seq for c in split]
    assert order.index(1) < order.index(2)
    assert [c.record.seq for c in deep].index(2) < [c.record.seq for c in deep].index(1)
