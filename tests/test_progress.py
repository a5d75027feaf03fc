"""Progress on stderr: plain lines when stderr is a file or pipe, a redrawn bar on a terminal
(a real pseudo-terminal, so `isatty()` answers as it would for a person)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from datakit import fill, memproc


def test_plain_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    done = memproc("export", "--db", str(tmp_path / "a.db"), "--all", str(tmp_path / "a.jsonl"))
    lines = done.stderr.splitlines()
    assert "\r" not in done.stderr
    progress = [line for line in lines if line.startswith("export: ")]
    assert progress[0] == "export: 1/32 records (0%)"
    assert progress[-1] == "export: 32/32 records (100%)"
    assert len(progress) == 11  # one line at each tenth of the work
    assert lines[-1] == f"exported 32 records to {tmp_path / 'a.jsonl'}"
    assert done.stdout == ""


def test_a_bar_on_a_terminal(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    primary, secondary = pty.openpty()
    try:
        command = [sys.executable, "-m", "memproc", "export", "--db", str(tmp_path / "a.db")]
        child = subprocess.Popen(
            [*command, "--all", str(tmp_path / "a.jsonl")],
            stdout=subprocess.PIPE,
            stderr=secondary,
        )
        os.close(secondary)
        seen = read_all(primary)
        stdout, _ = child.communicate(timeout=120)
    finally:
        os.close(primary)
    assert child.returncode == 0 and stdout == b""
    text = seen.decode()
    assert "\rexport [" in text
    assert f"\rexport [{'#' * 30}] 100% 32/32 records" in text
    assert "export: " not in text  # no plain lines on a terminal


def read_all(fd: int) -> bytes:
    """Everything the child writes to the terminal, until it closes its side."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # EIO: every writer has closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)
