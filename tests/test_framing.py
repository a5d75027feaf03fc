"""Line framing: `read_frames` over arbitrary chunking, and `LineWriter`'s whole-line writes."""

from __future__ import annotations

import itertools
import os
import threading
import tracemalloc
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memproc.server.framing import CHUNK_BYTES, LineWriter, Oversized, read_frames

MAX = 16  # a small cap so that generated streams often cross it
OVERSIZED = "<oversized>"


def chunked_reader(data: bytes, sizes: list[int]) -> Callable[[int], bytes]:
    """A fake `read(n)` that hands out `data` in chunks of the given sizes (the last size
    repeats), never more than `n` bytes, then b"" forever."""
    position = 0
    turn = 0

    def read(n: int) -> bytes:
        nonlocal position, turn
        size = min(n, sizes[min(turn, len(sizes) - 1)])
        turn += 1
        chunk = data[position : position + size]
        position += len(chunk)
        return chunk

    return read


def sizes_from_cuts(data: bytes, cuts: set[int]) -> list[int]:
    """Chunk sizes that cut `data` at the given offsets."""
    bounds = [0, *sorted(c for c in cuts if 0 < c < len(data)), len(data)]
    return [b - a for a, b in itertools.pairwise(bounds) if b > a] + [CHUNK_BYTES]


def frames(data: bytes, sizes: list[int], max_line_bytes: int = MAX) -> list[object]:
    return [
        OVERSIZED if isinstance(frame, Oversized) else frame
        for frame in read_frames(chunked_reader(data, sizes), max_line_bytes)
    ]


def model(data: bytes, max_line_bytes: int = MAX) -> list[object]:
    """What the issue asks for, written as plainly as possible."""
    out: list[object] = []
    for line in data.split(b"\n"):
        if line.endswith(b"\r"):
            line = line[:-1]
        if len(line) > max_line_bytes:
            out.append(OVERSIZED)
        elif line.strip():
            out.append(line)
    return out


# Streams made of pieces that stress the edges: CR, LF, CRLF, blanks, and lines of lengths
# around the cap.
pieces = st.one_of(
    st.sampled_from([b"\n", b"\r\n", b"\r", b" ", b"\t", b"\n\n", b"\r\r\n"]),
    st.binary(min_size=1, max_size=2 * MAX),
    st.integers(min_value=MAX - 2, max_value=MAX + 2).map(lambda n: b"x" * n),
    st.integers(min_value=MAX - 1, max_value=MAX + 1).map(lambda n: b"\n" + b"x" * n + b"\r\n"),
    st.text(max_size=8).map(lambda s: s.encode()),
)
streams = st.lists(pieces, max_size=30).map(b"".join)


@st.composite
def split_streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """A stream and the chunk sizes that cut it at random offsets."""
    data = draw(streams)
    cut_at = draw(st.sets(st.integers(min_value=1, max_value=max(1, len(data) - 1))))
    return data, sizes_from_cuts(data, cut_at)


@given(case=split_streams())
def test_random_splitting_gives_the_same_frames_as_reading_at_once(
    case: tuple[bytes, list[int]],
) -> None:
    data, sizes = case
    assert frames(data, sizes) == frames(data, [CHUNK_BYTES])


@given(case=split_streams())
def test_frames_follow_the_line_rules(case: tuple[bytes, list[int]]) -> None:
    data, sizes = case
    assert frames(data, sizes) == model(data)


@given(data=streams, size=st.integers(min_value=1, max_value=3 * MAX))
def test_fixed_size_reads_give_the_same_frames_as_the_model(data: bytes, size: int) -> None:
    assert frames(data, [size]) == model(data)


@pytest.mark.parametrize("sizes", [[1], [2], [3], [CHUNK_BYTES]])
def test_crlf_blank_lines_and_last_line_without_newline(sizes: list[int]) -> None:
    data = b'{"a":1}\r\n\r\n\n   \n\t\r\n{"b":2}\n{"c":3}'
    assert frames(data, sizes, 1024) == [b'{"a":1}', b'{"b":2}', b'{"c":3}']


def test_a_lone_carriage_return_inside_a_line_is_kept() -> None:
    assert frames(b"a\rb\r\n", [1], 1024) == [b"a\rb"]


def test_line_of_exactly_the_cap_followed_by_crlf_is_accepted_whatever_the_split() -> None:
    line = b"y" * MAX
    for split in range(1, MAX + 3):
        assert frames(line + b"\r\nz\n", [split]) == [line, b"z"], split


def test_one_marker_per_oversized_line_then_normal_service() -> None:
    data = b"ok1\n" + b"x" * 100 + b"\n" + b"ok2\n" + b"y" * 40 + b"\r\n" + b"ok3"
    for split in (1, 7, MAX, MAX + 1, 1000):
        assert frames(data, [split]) == [b"ok1", OVERSIZED, b"ok2", OVERSIZED, b"ok3"], split


def test_oversized_last_line_without_newline_gives_one_marker() -> None:
    assert frames(b"ok\n" + b"x" * 1000, [5]) == [b"ok", OVERSIZED]


def test_oversized_marker_reports_at_least_the_cap() -> None:
    (marker,) = list(read_frames(chunked_reader(b"x" * 100, [7]), MAX))
    assert isinstance(marker, Oversized)
    assert marker.size_at_least > MAX


def test_memory_stays_bounded_while_skipping_a_huge_line() -> None:
    """A 32 MiB line under a 64 KiB cap must not be buffered: peak allocation stays near the cap
    plus one chunk, far below the line's size."""
    cap = 64 * 1024
    block = b"x" * CHUNK_BYTES
    total_blocks = 512  # 32 MiB

    def source() -> Iterator[bytes]:
        for _ in range(total_blocks):
            yield block
        yield b'\n{"after":true}\n'

    blocks = source()

    def read(n: int) -> bytes:
        assert n >= CHUNK_BYTES
        return next(blocks, b"")

    tracemalloc.start()
    try:
        result = [
            OVERSIZED if isinstance(frame, Oversized) else frame for frame in read_frames(read, cap)
        ]
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result == [OVERSIZED, b'{"after":true}']
    assert peak < 8 * (cap + CHUNK_BYTES)  # generous; the line itself is 32 MiB


# -- LineWriter ---------------------------------------------------------------------------


def _drain(fd: int, into: bytearray) -> None:
    while chunk := os.read(fd, 1 << 16):
        into += chunk


def test_line_writer_writes_whole_lines_from_many_threads() -> None:
    """Lines far bigger than a pipe's buffer, from several threads: each arrives unbroken."""
    read_fd, write_fd = os.pipe()
    received = bytearray()
    reader = threading.Thread(target=_drain, args=(read_fd, received))
    reader.start()
    writer = LineWriter(write_fd)
    letters = b"abcdefgh"
    results: list[bool] = []

    def write_many(letter: int) -> None:
        for _ in range(5):
            results.append(writer.write(bytes([letter]) * 200_000 + b"\n"))

    threads = [threading.Thread(target=write_many, args=(letter,)) for letter in letters]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    os.close(write_fd)
    reader.join()
    os.close(read_fd)

    assert results == [True] * 40
    lines = bytes(received).split(b"\n")
    assert lines[-1] == b""
    assert len(lines[:-1]) == 40
    for line in lines[:-1]:
        assert len(line) == 200_000
        assert line == line[:1] * 200_000
    assert sorted(line[0] for line in lines[:-1]) == sorted(list(letters) * 5)


def test_line_writer_reports_a_closed_reader_and_stays_broken() -> None:
    read_fd, write_fd = os.pipe()
    writer = LineWriter(write_fd)
    assert writer.write(b"first\n") is True
    assert os.read(read_fd, 100) == b"first\n"
    os.close(read_fd)
    try:
        assert writer.write(b"second\n") is False
        assert writer.broken is True
        assert writer.write(b"third\n") is False
    finally:
        os.close(write_fd)
