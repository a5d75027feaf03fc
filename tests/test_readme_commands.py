"""The README's examples for export, import, backup, doctor, search and list run as written,
in order, in a directory holding a store, and each succeeds."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from indexkit import fill_indexed

README = Path(__file__).resolve().parent.parent / "README.md"
SECTIONS = ("Export and import", "Backup", "Doctor", "Reading a store from the command line")
PROGRAM = ".venv/bin/memproc"


def section(text: str, title: str) -> str:
    return text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]


def examples(title: str) -> list[list[str]]:
    """The commands in the section's ```sh blocks, comments dropped."""
    blocks = section(README.read_text(), title).split("```sh\n")[1:]
    lines = [line for block in blocks for line in block.split("```", 1)[0].splitlines()]
    return [shlex.split(line, comments=True) for line in lines if line.startswith(PROGRAM)]


def test_every_section_has_examples() -> None:
    assert all(examples(title) for title in SECTIONS)


@pytest.fixture
def workdir(tmp_path: Path, minilm_dir: Path) -> Path:
    fill_indexed(tmp_path / "memory.db", minilm_dir.parent, scope="/work/app")
    return tmp_path


def test_the_examples_run(workdir: Path, minilm_dir: Path) -> None:
    env = {**os.environ, "MEMPROC_MODELS": str(minilm_dir.parent)}
    outputs = []
    for title in SECTIONS:
        for command in examples(title):
            completed = subprocess.run(
                [sys.executable, "-m", "memproc", *command[1:]],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert completed.returncode == 0, (command, completed.stdout, completed.stderr)
            outputs.append(completed)
    by_command = {" ".join(c.args[3:5]): c for c in outputs}
    assert "imported 0 records" in outputs[2].stderr  # the second import
    doctor_json = [c for c in outputs if c.args[3] == "doctor" and "--json" in c.args][-1]
    assert json.loads(doctor_json.stdout)["ok"] is True
    table = [c for c in outputs if c.args[3] == "search" and "table" in c.args][-1]
    assert table.stdout.splitlines()[0].split() == ["#", "score", "kind", "date", "id", "content"]
    assert "release note" in table.stdout
    searched = json.loads(by_command["search --db"].stdout)
    assert searched["mode"] == "hybrid" and searched["degraded"] is None
    assert len(searched["results"]) == 6
    assert (workdir / "memory-backup.db").is_file()
