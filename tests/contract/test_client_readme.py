"""The README's Python client example, run exactly as printed against the real process, so
that it cannot rot: the code block under "### Python client", in a fresh directory."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from client import clean_env

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    section = README.read_text().split("\n### Python client\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "no python block under ### Python client"
    return match.group(1)


def test_the_readme_example_runs_and_prints_what_it_says(tmp_path: Path) -> None:
    code = readme_example()
    promised = re.findall(r"print\(.*\)  # (.*)$", code, re.MULTILINE)
    assert promised, "the example shows what it prints in a comment"
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == promised
    assert (tmp_path / "memory.db").exists()
