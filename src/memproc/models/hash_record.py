"""A record of the pinned files a model directory's hashes were last checked on, so that a
service starting again does not read ~113 MB (MiniLM's graph and its optimized copy) only to
find the same hashes: ~80 ms of every start.

Why a file's identity stands for its content here: a file that was rewritten, replaced or
truncated has another inode, size, mtime or ctime, and ctime cannot be set back by anyone
short of the kernel's clock. As git does with its index, an entry is only made for a file last
changed more than `SETTLE_NS` before the check: a file changed again within the same tick of
the file system's clock would otherwise keep the identity the entry holds. What the record
cannot see is a change below the file system (a disk's bit rot); `memproc models verify`, and
every pull and install, always read every byte.

The record is `.memproc-hashes.json` in the model directory. When the directory is read-only,
nothing is recorded and every start reads the files, as before.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time

import msgspec

RECORD_NAME = ".memproc-hashes.json"
SETTLE_NS = 2_000_000_000

log = logging.getLogger("memproc.models")


class Seen(msgspec.Struct, array_like=True, frozen=True):
    sha256: str
    size: int
    inode: int
    mtime_ns: int
    ctime_ns: int


def identity(path: str, sha256: str) -> Seen:
    stat = os.stat(path)
    return Seen(sha256, stat.st_size, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns)


def read(directory: str) -> dict[str, Seen]:
    try:
        with open(os.path.join(directory, RECORD_NAME), "rb") as handle:
            return msgspec.json.decode(handle.read(), type=dict[str, Seen])
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return {}


def unchanged(directory: str, record: dict[str, Seen], name: str, expected: str) -> bool:
    """Whether `name` is the very file whose hash was found to be `expected`."""
    seen = record.get(name)
    if seen is None or seen.sha256 != expected:
        return False
    try:
        return identity(os.path.join(directory, name), expected) == seen
    except OSError:
        return False


def settled(seen: Seen) -> bool:
    return time.time_ns() - max(seen.mtime_ns, seen.ctime_ns) > SETTLE_NS


def write(directory: str, record: dict[str, Seen]) -> None:
    """Replace the record atomically; a directory that cannot be written keeps none."""
    path = os.path.join(directory, RECORD_NAME)
    temporary = f"{path}.{os.getpid()}.tmp"
    try:
        with open(temporary, "wb") as handle:
            handle.write(msgspec.json.encode(record))
        os.replace(temporary, path)
    except OSError as exc:
        log.debug("hash record not written", extra={"directory": directory, "reason": str(exc)})
        with contextlib.suppress(OSError):
            os.unlink(temporary)
