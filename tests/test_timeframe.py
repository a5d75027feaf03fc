"""Time awareness: which span a query asks about, and how the time channel reorders."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memproc.config import Config
from memproc.ops import search as search_ops
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.retrieval.query import lexical_match
from memproc.retrieval.timeframe import find_timeframe
from memproc.runtime import Runtime
from memproc.wire.messages import RememberParams, SearchParams

NOW = datetime(2023, 3, 21, 21, 43, tzinfo=UTC)  # a Tuesday evening


def span(query: str, now: datetime = NOW) -> tuple[date, date] | None:
    frame = find_timeframe(query, now)
    return None if frame is None else (frame.start.date(), frame.end.date())


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what happened yesterday?", (date(2023, 3, 20), date(2023, 3, 21))),
        ("anything today", (date(2023, 3, 21), date(2023, 3, 22))),
        ("Which bike did I service the past weekend?", (date(2023, 3, 18), date(2023, 3, 20))),
        ("where did I go last Tuesday", (date(2023, 3, 14), date(2023, 3, 15))),
        ("what did I eat on Sunday", (date(2023, 3, 19), date(2023, 3, 20))),
        ("spent in the last four months", (date(2022, 11, 21), date(2023, 3, 21))),
        ("over the past 3 days", (date(2023, 3, 18), date(2023, 3, 21))),
        ("what did I do two weeks ago", (date(2023, 3, 4), date(2023, 3, 12))),
        ("a month ago", (date(2023, 2, 4), date(2023, 3, 7))),
        ("what did I buy in March", (date(2023, 3, 1), date(2023, 3, 21))),
        ("the trip in November", (date(2022, 11, 1), date(2022, 12, 1))),
        ("goals this year", (date(2023, 1, 1), date(2023, 3, 21))),
    ],
)
def test_expressions_of_relative_time(query: str, expected: tuple[date, date]) -> None:
    assert span(query) == expected


@pytest.mark.parametrize(
    "query",
    [
        "How many projects have I led?",
        "you may want to retry",
        "the weekend plans document",
        "a week-long migration",
        "what is the date format",
    ],
)
def test_no_time_expression_no_frame(query: str) -> None:
    assert span(query) is None


def test_last_weekend_said_on_a_sunday_is_the_one_before() -> None:
    sunday = datetime(2023, 3, 19, 10, 0, tzinfo=UTC)
    assert span("last weekend", sunday) == (date(2023, 3, 11), date(2023, 3, 13))
    assert span("this weekend", sunday) == (date(2023, 3, 18), date(2023, 3, 19))


@given(
    st.text(max_size=200),
    st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1)),
)
def test_any_text_gives_none_or_a_span_that_ends_by_now(text: str, naive_now: datetime) -> None:
    now = naive_now.replace(tzinfo=UTC)
    frame = find_timeframe(text, now)
    if frame is not None:
        assert frame.start < frame.end <= now + timedelta(days=1)
        assert frame.contains(frame.start) and not frame.contains(frame.end)
        assert frame.distance(frame.start - timedelta(days=2)) == timedelta(days=2)


# -- the time channel in a search --------------------------------------------------------------


def test_the_asked_about_span_lifts_an_equally_relevant_memory(tmp_path: Path) -> None:
    runtime = Runtime(Config(db=str(tmp_path / "t.db"), embedder="none", reranker="none"))
    runtime.open_store()
    ctx = OpContext(runtime=runtime)
    try:
        in_frame = remember(ctx, "fixed the brakes on the road bike", "2023-03-19T07:08:00Z")
        remember(ctx, "fixed the chain on the road bike", "2023-03-15T08:43:00Z")

        def ids(query: str) -> tuple[list[str], Any]:
            params = SearchParams(
                scope="s", query=query, mode="lexical", now=NOW.isoformat(), explain=True
            )
            result = search_ops.search(ctx, params)
            return [hit.id for hit in result.results], result.explanation

        plain, plain_explanation = ids("which bike did I fix")
        timed, explanation = ids("which bike did I fix the past weekend")
    finally:
        runtime.close()
    assert plain[0] != in_frame and plain_explanation.queries.timeframe is None
    assert timed[0] == in_frame
    assert explanation.queries.timeframe.startswith("'past weekend'")
    assert [c.time_rank for c in explanation.candidates] == [1, 2]


def remember(ctx: OpContext, content: str, occurred_at: str) -> str:
    params = RememberParams(scope="s", kind="episode", content=content, occurred_at=occurred_at)
    return memory_ops.remember(ctx, params).id


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what is the bike", '"bike"'),
        ("What did I do?", '"What" OR "did" OR "I" OR "do"'),
        ("the NEAR operator", '"NEAR" OR "operator"'),
    ],
)
def test_lexical_query_drops_function_words_unless_nothing_is_left(
    query: str, expected: str
) -> None:
    assert lexical_match(query) == expected


@pytest.mark.parametrize(
    ("query", "phrase", "expected"),
    [
        (
            "what sports event did I join two weeks ago",
            "two weeks ago",
            '"sports" OR "event" OR "join"',
        ),
        ("What did I buy last Thursday?", "last thursday", '"buy"'),
        ("what did I mention about the deploy key", None, '"deploy" OR "key"'),
        ("remind me what you told me", None, '"remind" OR "told"'),
    ],
)
def test_lexical_query_leaves_out_the_time_phrase_and_words_about_recalling(
    query: str, phrase: str | None, expected: str
) -> None:
    """The time phrase is the time channel's to weigh; "mention", "told" describe the asking.
    A query of nothing else keeps its recall words rather than matching everything."""
    assert lexical_match(query, phrase) == expected


def test_a_time_phrase_in_the_query_does_not_match_memories_that_mention_weeks(
    tmp_path: Path,
) -> None:
    runtime = Runtime(Config(db=str(tmp_path / "t.db"), embedder="none", reranker="none"))
    runtime.open_store()
    ctx = OpContext(runtime=runtime)
    try:
        remember(ctx, "two weeks of rain, the whole weeks long", "2023-03-10T07:08:00Z")
        wanted = remember(ctx, "the charity soccer tournament", "2023-03-10T08:43:00Z")
        params = SearchParams(
            scope="s", query="which tournament two weeks ago", mode="lexical", now=NOW.isoformat()
        )
        result = search_ops.search(ctx, params)
    finally:
        runtime.close()
    assert [hit.id for hit in result.results] == [wanted]
