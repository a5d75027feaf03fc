"""Making sure the database path holds memproc's own file: before it is opened, and while it is.

SQLite trusts whatever sits at the path, and two faults turn that into lost or damaged data
(both reproduced by tests/stress/stress_faults.py):

- A foreign file at the path beside a leftover `-wal` (a database replaced after a crash, say)
  is read *through* the WAL as if it were a database, and the next checkpoint writes memproc's
  pages into it. So the file's first bytes must be SQLite's header before anything opens it.
- A database file replaced, renamed or deleted while open keeps taking commits into the old
  inode, which nobody will read again: acknowledged writes would be lost. So every transaction
  first checks that the path still names the file the store opened (same device and inode).

The header is read through SQLite's own VFS rather than `os.open`: closing any descriptor of a
file drops every POSIX lock the process holds on it, those of open connections included
("How To Corrupt An SQLite Database File", 2.2); SQLite's VFS defers such closes.
"""

from __future__ import annotations

import os
import stat

import apsw

from memproc.store.errors import storage_unavailable

SQLITE_HEADER = b"SQLite format 3\x00"

FileIdentity = tuple[int, int]  # (st_dev, st_ino)


def require_sqlite_file(path: str) -> None:
    """Refuse a non-empty regular file that does not start with SQLite's header. Anything
    else (no file yet, an empty one, a directory) is left for SQLite to open or refuse."""
    try:
        info = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(info.st_mode) or info.st_size == 0:
        return
    if _first_bytes(path, len(SQLITE_HEADER)) not in (None, SQLITE_HEADER):
        raise storage_unavailable("not_a_database")


def _first_bytes(path: str, count: int) -> bytes | None:
    """The file's first `count` bytes, or None when SQLite's VFS cannot open it (then SQLite
    itself reports why when the connection opens)."""
    flags = [apsw.SQLITE_OPEN_MAIN_DB | apsw.SQLITE_OPEN_READONLY, 0]
    try:
        file = apsw.VFSFile("", path, flags)
    except apsw.Error:
        return None
    try:
        return bytes(file.xRead(count, 0))
    except apsw.Error:
        return None
    finally:
        file.xClose()


def identity(path: str) -> FileIdentity | None:
    """Which file the path names now; None if that cannot be told."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def require_same_file(path: str, opened: FileIdentity | None) -> None:
    """Raise unless `path` still names the file that was opened (`opened`; None when its
    identity could not be taken, and then there is nothing to compare). A path that cannot be
    looked at (its directory made unsearchable) passes: the open files still work."""
    if opened is None:
        return
    try:
        info = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        raise storage_unavailable("replaced") from None
    except OSError:
        return
    if (info.st_dev, info.st_ino) != opened:
        raise storage_unavailable("replaced")


def on_read_only_file_system(path: str) -> bool:
    """Whether the database's directory is on a read-only mount. SQLite reports that as
    "cannot open" (it needs to create the -wal and -shm files), which hides the real cause."""
    try:
        flags = os.statvfs(os.path.dirname(os.path.abspath(path))).f_flag
    except OSError:
        return False
    return bool(flags & os.ST_RDONLY)
