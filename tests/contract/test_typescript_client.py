"""The TypeScript client in clients/typescript, run by Node's own test runner against the real
`memproc serve` of this interpreter: proof that schemas/ is enough to write a client.

Its types are generated from schemas/ at every build (gen-types.mjs), and its tests check every
message against the schema files at run time. Node.js and npm are required (every machine here
has them): without them this test fails rather than skips. The one npm install (typescript and
@types/node, pinned by the committed package-lock.json) happens here, once per checkout.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

PACKAGE = Path(__file__).resolve().parents[2] / "clients" / "typescript"
INSTALL_TIMEOUT_S = 600
TEST_TIMEOUT_S = 300
OUTPUT_TAIL_CHARS = 20_000


def run(argv: list[str], timeout: float, env: dict[str, str]) -> str:
    """Run a step in the package directory; fail the test with its output if it fails."""
    try:
        done = subprocess.run(
            argv,
            cwd=PACKAGE,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as expired:
        output = expired.output if isinstance(expired.output, str) else ""
        pytest.fail(f"{' '.join(argv)} took over {timeout} s:\n{output[-OUTPUT_TAIL_CHARS:]}")
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(argv)} exited {done.returncode}:\n{done.stdout[-OUTPUT_TAIL_CHARS:]}"
        )
    return done.stdout


def test_typescript_client_against_the_real_process() -> None:
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("Node.js 20+ with npm is needed for the TypeScript client's tests")
    env = {
        **os.environ,
        "NPM_CONFIG_UPDATE_NOTIFIER": "false",
        "MEMPROC_TS_SERVE": json.dumps([sys.executable, "-m", "memproc", "serve"]),
    }
    installed = PACKAGE / "node_modules" / ".package-lock.json"
    lock = PACKAGE / "package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        run([npm, "ci", "--no-audit", "--no-fund", "--prefer-offline"], INSTALL_TIMEOUT_S, env)
    output = run([npm, "test"], TEST_TIMEOUT_S, env)
    assert "# fail 0" in output or "ℹ fail 0" in output, output[-OUTPUT_TAIL_CHARS:]
