"""Checking a `file:` reference: does the file inside the project still have the hash observed?

Only files inside the scope's project directory (the scope is its canonical absolute path) are
ever opened. The path is resolved with every symlink followed *before* opening, and a target
that lands outside the project is reported, not read; the final open refuses a symlink, so a
link swapped in between the two steps is not followed either. Nothing is executed or fetched.
"""

from __future__ import annotations

import hashlib
import os
import stat

from memproc.wire.evidence_messages import EvidenceReason

_CHUNK = 1 << 20


def check_file(project: str, relative: str, expected_sha256: str) -> EvidenceReason | None:
    """None when the file is inside the project and unchanged, else the reason it is not."""
    if not project.startswith("/"):
        return "file_outside_project"  # a scope that is not a directory has no files inside it
    root = os.path.realpath(project)
    target = os.path.realpath(os.path.join(root, relative))
    if os.path.commonpath([root, target]) != root:
        return "file_outside_project"
    digest = _hash_regular_file(target)
    if digest is None:
        return "file_missing"
    return None if digest == expected_sha256 else "file_changed"


def _hash_regular_file(path: str) -> str | None:
    """sha256 of a regular file, or None if there is none there (a FIFO or device is none)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return None
            digest = hashlib.sha256()
            while chunk := handle.read(_CHUNK):
                digest.update(chunk)
    except OSError:
        return None
    return digest.hexdigest()
