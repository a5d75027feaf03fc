"""Line framing: bytes from stdin -> request lines, and response objects -> bytes on stdout.

The reader is a pure generator over a `read(n)` function so it can be tested without a pipe.
It never holds more than `max_line_bytes` plus one chunk, however long a hostile line is.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator

CHUNK_BYTES = 64 * 1024


class Oversized:
    """Stands in for a line that exceeded the cap; its bytes were skipped to the next newline."""

    __slots__ = ("size_at_least",)

    def __init__(self, size_at_least: int) -> None:
        self.size_at_least = size_at_least


def read_frames(read: Callable[[int], bytes], max_line_bytes: int) -> Iterator[bytes | Oversized]:
    """Yield each nonblank line (without its `\\n` or `\\r\\n`) or an Oversized marker."""
    buffer = bytearray()
    skipping = False
    while chunk := read(CHUNK_BYTES):
        start = 0
        while (newline := chunk.find(b"\n", start)) != -1:
            piece = chunk[start:newline]
            start = newline + 1
            if skipping:
                skipping = False
                continue
            buffer += piece
            yield from _complete(buffer, max_line_bytes)
            buffer.clear()
        if skipping:
            continue
        buffer += chunk[start:]
        # A trailing `\r` may be the first half of a `\r\n` split across reads: not counted.
        if len(buffer) - buffer.endswith(b"\r") > max_line_bytes:
            yield Oversized(len(buffer))
            buffer.clear()
            skipping = True
    if buffer and not skipping:
        yield from _complete(buffer, max_line_bytes)


def _complete(line: bytearray, max_line_bytes: int) -> Iterator[bytes | Oversized]:
    if line.endswith(b"\r"):
        del line[-1]
    if len(line) > max_line_bytes:
        yield Oversized(len(line))
    elif line.strip():
        yield bytes(line)


def fd_reader(fd: int) -> Callable[[int], bytes]:
    """A `read(n)` over a raw file descriptor that treats a reset pipe as end of input."""

    def read(size: int) -> bytes:
        try:
            return os.read(fd, size)
        except (BrokenPipeError, ConnectionResetError):
            return b""

    return read


class LineWriter:
    """Writes whole lines to a file descriptor, one writer at a time, never interleaved."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = threading.Lock()
        self.broken = False

    def write(self, line: bytes) -> bool:
        """Write `line` (which ends in a newline). False if the reader has gone away."""
        with self._lock:
            if self.broken:
                return False
            view = memoryview(line)
            try:
                while view:
                    written = os.write(self._fd, view)
                    view = view[written:]
            except OSError:
                self.broken = True
                return False
            return True
