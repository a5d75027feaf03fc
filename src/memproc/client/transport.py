"""Where a client's server is: a process it spawns (and may restart), a process the caller
spawned, or a pair of binary streams. Each opens a `Link`: the two streams, and how to tell
why they ended.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import IO, Protocol

from memproc.client.errors import ServerGone

DEFAULT_COMMAND = (sys.executable, "-m", "memproc", "serve")
# After the server's output ends, how long to wait for the process to exit before reporting
# (and, if the client spawned it, killing) it: memproc exits within moments of closing stdout.
EXIT_GRACE_S = 5.0
STDERR_TAIL_CHARS = 8000


class Link(Protocol):
    """One connection's streams, and its end: `gone` says why (waiting for a process to exit
    so that the exit status and stderr are in it); `stop` ends it by force."""

    reader: IO[bytes]
    writer: IO[bytes]

    @property
    def process(self) -> subprocess.Popen[bytes] | None: ...

    def gone(self, reason: str) -> ServerGone: ...

    def stop(self, timeout: float) -> None: ...


class Transport(Protocol):
    """How to reach a server; `restarts` bounds how often a dead one may be replaced."""

    restarts: int

    def open(self) -> Link: ...


class _StderrTail:
    """Drains a child's stderr on a thread (so the child never blocks on a full pipe) and
    keeps the last `limit` characters for `ServerGone`."""

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        self._stream = stream
        self._limit = limit
        self._tail = b""
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._drain, name="memproc-stderr", daemon=True)
        self._thread.start()

    def _drain(self) -> None:
        with self._stream:
            while chunk := os.read(self._stream.fileno(), 1 << 16):
                with self._lock:
                    self._tail = (self._tail + chunk)[-4 * self._limit :]

    def text(self, timeout: float = 1.0) -> str:
        self._thread.join(timeout)  # the rest arrives once the process has exited
        with self._lock:
            return self._tail.decode(errors="replace")[-self._limit :]


class ProcessLink:
    """A child process's stdin and stdout. `owned`: the client started it, so it may kill it."""

    def __init__(
        self, process: subprocess.Popen[bytes], tail: _StderrTail | None, *, owned: bool
    ) -> None:
        if process.stdin is None or process.stdout is None:
            raise ValueError("the process needs stdin=PIPE and stdout=PIPE")
        self._process = process
        self.reader = process.stdout
        self.writer = process.stdin
        self._tail = tail
        self._owned = owned

    @property
    def process(self) -> subprocess.Popen[bytes]:
        return self._process

    def gone(self, reason: str) -> ServerGone:
        try:
            status: int | None = self.process.wait(EXIT_GRACE_S)
        except subprocess.TimeoutExpired:
            status = None
            if self._owned:
                self.stop(0)
                status = self.process.returncode
        tail = self._tail.text() if self._tail is not None else ""
        return ServerGone(reason, exit_status=status, stderr_tail=tail)

    def stop(self, timeout: float) -> None:
        """SIGTERM, then SIGKILL after `timeout` (memproc answers what it can on SIGTERM)."""
        if self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class StreamLink:
    """Two streams the caller opened: no process, so no exit status and nothing to kill."""

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.reader = reader
        self.writer = writer

    @property
    def process(self) -> None:
        return None

    def gone(self, reason: str) -> ServerGone:
        return ServerGone(reason)

    def stop(self, timeout: float) -> None:
        for stream in (self.writer, self.reader):
            with contextlib.suppress(OSError, ValueError):
                stream.close()


class Spawn:
    """Start `memproc serve` (by default `python -m memproc serve ARGS...` with this
    interpreter) as a child, and start it again when it dies, at most `restarts` times over the
    client's life. Its stderr is drained and its tail kept for `ServerGone`."""

    def __init__(
        self,
        *args: str | os.PathLike[str],
        command: Sequence[str] = DEFAULT_COMMAND,
        env: Mapping[str, str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        restarts: int = 3,
        stderr_tail_chars: int = STDERR_TAIL_CHARS,
    ) -> None:
        self.argv = [*command, *(os.fspath(arg) for arg in args)]
        self.env = None if env is None else dict(env)
        self.cwd = cwd
        self.restarts = restarts
        self.stderr_tail_chars = stderr_tail_chars

    def __repr__(self) -> str:
        return f"Spawn({self.argv!r})"

    def open(self) -> Link:
        process = subprocess.Popen(
            self.argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=self.env,
            cwd=self.cwd,
        )
        assert process.stderr is not None
        return ProcessLink(process, _StderrTail(process.stderr, self.stderr_tail_chars), owned=True)


class Process:
    """A `memproc serve` process the caller started (with stdin and stdout pipes). Never
    restarted; its stderr tail is kept only if the caller piped stderr and left it unread."""

    restarts = 0

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self._opened = False

    def open(self) -> Link:
        if self._opened:
            raise ServerGone("the attached process is gone", exit_status=self.process.poll())
        self._opened = True
        stderr = self.process.stderr
        tail = _StderrTail(stderr, STDERR_TAIL_CHARS) if stderr is not None else None
        return ProcessLink(self.process, tail, owned=False)


class Streams:
    """A server reached through two binary streams: lines are read from `reader` and written
    to `writer` (its stdout and stdin). Never restarted; closing the client closes both."""

    restarts = 0

    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self.reader = reader
        self.writer = writer
        self._opened = False

    def open(self) -> Link:
        if self._opened:
            raise ServerGone("the attached streams are closed")
        self._opened = True
        return StreamLink(self.reader, self.writer)
