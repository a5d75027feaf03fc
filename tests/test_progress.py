"""Progress on stderr: plain lines when stderr is a file or pipe, a redrawn bar on a terminal
(a real pseudo-terminal, so `isatty()` answers as it would for a person)."""

from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

from datakit import fill, memproc, records_in


def test_plain_lines_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    fill(tmp_path / "a.db")
    done = memproc("export", "--db", str(tmp_path / "a.db"), "--all", str(tmp_path / "a.jsonl"))
    lines = done.stderr.splitlines()
    assert "\r" not in done.stderr
    progress = [line for line in lines if line.startswith("export: ")]
    n = records_in(tmp_path / "a.jsonl")
    assert progress[0] == f"export: 1/{n} records (0%)"
    assert progress[-1] == f"export: {n}/{n} records (100%)"
    assert len(progress) == 11  # one line at each tenth of the work
    assert lines[-1] == f"exported {n} records to {tmp_path / 'a.jsonl'}"
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
    n = records_in(tmp_path / "a.jsonl")
    assert f"\rexport [{'#' * 30}] 100% {n}/{n} records" in text
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


def test_a_model_install_counts_its_steps(tmp_path: Path, minilm_dir: Path) -> None:
    """Copying the pinned files and the manifest, checking every hash, building the optimized
    copy: five steps, as lines off a terminal and as a bar on one."""
    source = tmp_path / "minilm-l6-int8"
    for name in ("model.onnx", "tokenizer.json", "memproc-model.json"):
        (source / name).parent.mkdir(exist_ok=True)
        (source / name).write_bytes((minilm_dir / name).read_bytes())
    done = memproc("models", "install", str(source), "--models-dir", str(tmp_path / "plain"))
    assert done.returncode == 0, done.stderr
    steps = [line for line in done.stderr.splitlines() if line.startswith("install ")]
    assert steps[0] == "install minilm-l6-int8: 0/5 steps (0%)"
    assert steps[-1] == "install minilm-l6-int8: 5/5 steps (100%)"
    primary, secondary = pty.openpty()
    try:
        command = [sys.executable, "-m", "memproc", "models", "install", str(source)]
        child = subprocess.Popen(
            [*command, "--models-dir", str(tmp_path / "tty")],
            stdout=subprocess.PIPE,
            stderr=secondary,
        )
        os.close(secondary)
        seen = read_all(primary).decode()
        stdout, _ = child.communicate(timeout=300)
    finally:
        os.close(primary)
    assert child.returncode == 0 and stdout.decode().strip().endswith("minilm-l6-int8")
    assert f"\rinstall minilm-l6-int8 [{'#' * 30}] 100% 5/5 steps" in seen
    assert "install minilm-l6-int8: " not in seen
