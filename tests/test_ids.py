"""UUIDv7 ids: valid, strictly increasing in a process, unique across threads."""

from __future__ import annotations

import itertools
import threading
import time
import uuid

import pytest

from memproc import ids
from memproc.ids import uuid7


def test_values_are_valid_uuid_version_7() -> None:
    for _ in range(1000):
        text = uuid7()
        value = uuid.UUID(text)
        assert value.version == 7
        assert value.variant == uuid.RFC_4122
        assert str(value) == text  # canonical lower-case form


def test_the_timestamp_is_unix_milliseconds() -> None:
    before = time.time_ns() // 1_000_000
    value = uuid.UUID(uuid7())
    after = time.time_ns() // 1_000_000
    assert before <= value.int >> 80 <= after + 1


def test_strictly_increasing_across_100k_calls() -> None:
    values = [uuid7() for _ in range(100_000)]
    assert all(a < b for a, b in itertools.pairwise(values))
    as_ints = [uuid.UUID(v).int for v in values]
    assert as_ints == sorted(set(as_ints))  # string order is numeric order


def test_increasing_when_the_clock_stands_still_or_goes_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    clock = iter([5_000_000_000_000] * 5000 + [4_000_000_000_000] * 10)
    monkeypatch.setattr(ids, "now_ms", lambda: next(clock))
    monkeypatch.setattr(ids, "_last_ms", 0)
    monkeypatch.setattr(ids, "_counter", 0)
    values = [uuid7() for _ in range(5010)]  # > 4096: the 12-bit counter must roll over
    assert all(a < b for a, b in itertools.pairwise(values))
    assert {uuid.UUID(v).version for v in values} == {7}


def test_unique_across_threads() -> None:
    results: list[list[str]] = [[] for _ in range(8)]
    barrier = threading.Barrier(8)

    def make(into: list[str]) -> None:
        barrier.wait()
        into.extend(uuid7() for _ in range(10_000))

    threads = [threading.Thread(target=make, args=(into,)) for into in results]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [value for into in results for value in into]
    assert len(set(every)) == 80_000
    for into in results:  # each thread's own sequence is increasing too
        assert all(a < b for a, b in itertools.pairwise(into))
