"""`memproc ui` as a real child process, for the viewer's tests: started on a store, its URL
read from stderr, stopped with SIGTERM (and its exit checked) at the end."""

from __future__ import annotations

import queue
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

# A ceiling for start-up (MiniLM loads before the URL is printed) and for shutdown; failing
# past it, never a pause.
DEADLINE_S = 120.0
URL_LINE = re.compile(r"^memproc ui: .* at (?P<url>http://127\.0\.0\.1:\d+/\?token=\S+)$")


@dataclass
class Viewer:
    url: str
    process: subprocess.Popen[str]
    stderr: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        """The URL without the token: what a caller who does not know it can reach."""
        parts = urlsplit(self.url)
        return f"{parts.scheme}://{parts.netloc}"

    @property
    def token(self) -> str:
        return self.url.rpartition("token=")[2]

    def said(self) -> str:
        return "".join(self.stderr)


def running_viewer(db: Path, models_dir: Path) -> AbstractContextManager[Viewer]:
    """The viewer on `db`; on leaving, SIGTERM, which must end it with status 0."""
    return running(["ui", "--db", str(db), "--models-dir", str(models_dir)])


@contextmanager
def running(args: list[str], cwd: Path | None = None) -> Iterator[Viewer]:
    """`memproc ARGS` (a `ui` command) in `cwd`, stopped as `running_viewer` says."""
    process = subprocess.Popen(
        [sys.executable, "-m", "memproc", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    stderr: list[str] = []
    reader = threading.Thread(target=_read_lines, args=(process, lines, stderr), daemon=True)
    reader.start()
    try:
        viewer = Viewer(_wait_for_url(process, lines, stderr), process, stderr)
        yield viewer
    finally:
        _stop(process, reader, stderr)


def _read_lines(
    process: subprocess.Popen[str], lines: queue.Queue[str | None], kept: list[str]
) -> None:
    assert process.stderr is not None
    for line in process.stderr:
        kept.append(line)
        lines.put(line)
    lines.put(None)


def _wait_for_url(
    process: subprocess.Popen[str], lines: queue.Queue[str | None], stderr: list[str]
) -> str:
    while True:
        try:
            line = lines.get(timeout=DEADLINE_S)
        except queue.Empty:
            raise AssertionError(
                f"no URL within {DEADLINE_S}s; stderr:\n{''.join(stderr)}"
            ) from None
        if line is None:
            raise AssertionError(f"memproc ui exited ({process.wait()}):\n{''.join(stderr)}")
        found = URL_LINE.match(line.strip())
        if found:
            return found["url"]


def _stop(process: subprocess.Popen[str], reader: threading.Thread, stderr: list[str]) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        status = process.wait(timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise AssertionError(f"memproc ui ignored SIGTERM:\n{''.join(stderr)}") from None
    reader.join(DEADLINE_S)
    if process.stderr is not None:
        process.stderr.close()
    assert status == 0, f"memproc ui exited {status}:\n{''.join(stderr)}"
    assert stderr and stderr[-1].strip() == "memproc ui: stopped", "".join(stderr)
