"""`memproc search` and `memproc list` through the real command: the JSON result of the method,
a table, and the protocol's validation with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import datakit
from indexkit import fill_indexed
from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.runtime import Runtime
from memproc.wire.messages import RememberBatchParams, RememberItem


def memproc(*args: str, columns: int = 100) -> subprocess.CompletedProcess[str]:
    """The command with the terminal width the table is sized to."""
    return datakit.memproc(*args, env={**os.environ, "COLUMNS": str(columns)})


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path) -> Path:
    return fill_indexed(tmp_path_factory.mktemp("query") / "memory.db", minilm_dir.parent)


def test_search_prints_the_methods_json_result(store: Path, minilm_dir: Path) -> None:
    done = memproc(
        "search", "--db", str(store), "--models-dir", str(minilm_dir.parent), "--scope", "p",
        "--limit", "3", "release caching",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["mode"] == "hybrid" and result["degraded"] is None
    assert len(result["results"]) == 3
    assert all("about caching" in hit["content"] for hit in result["results"])


def test_list_as_a_table_fits_the_terminal(store: Path) -> None:
    done = memproc("list", "--db", str(store), "--scope", "p", "--format", "table", columns=90)
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert header.split() == ["kind", "status", "date", "id", "content"]
    assert len(rows) == 6 and all(row.split()[:2] == ["note", "active"] for row in rows)
    assert all(len(line) <= 90 for line in [header, *rows])
    assert all(row.endswith("…") for row in rows)  # the content cut to the width left


def test_an_empty_answer_says_so(store: Path) -> None:
    done = memproc("list", "--db", str(store), "--scope", "elsewhere", "--format", "table")
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "(nothing found)"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["search", "--limit", "500", "x"], "$.limit"),
        (["list", "--kind", "gossip"], "$.kinds[0]"),
    ],
)
def test_bad_parameters_exit_2_naming_the_field(store: Path, args: list[str], said: str) -> None:
    done = memproc(args[0], "--db", str(store), "--scope", "p", *args[1:])
    assert done.returncode == 2 and said in done.stderr and done.stdout == ""


def test_a_search_says_when_memories_have_no_vectors_yet(tmp_path: Path, minilm_dir: Path) -> None:
    """Stored while no model was installed: this read-only command embeds nothing, so it says
    how many memories only its words can find, and how to embed them."""
    db = tmp_path / "plain.db"
    runtime = Runtime(Config(db=str(db), embedder="none", reranker="none"))
    try:
        runtime.open_store()
        items = [RememberItem(kind="note", content=f"plain note {i}") for i in range(3)]
        memory_ops.remember_batch(
            OpContext(runtime=runtime), RememberBatchParams(scope="p", items=items)
        )
    finally:
        runtime.close()
    args = ["search", "--db", str(db), "--models-dir", str(minilm_dir.parent), "--scope", "p"]
    done = memproc(*args, "plain note")
    assert done.returncode == 0, done.stderr
    assert "3 memories have no vectors yet" in done.stderr
    assert "memproc index rebuild" in done.stderr
    rebuilt = datakit.memproc(
        "index", "rebuild", "--db", str(db), "--models-dir", str(minilm_dir.parent)
    )
    assert rebuilt.returncode == 0, rebuilt.stderr
    again = memproc(*args, "plain note")
    assert again.returncode == 0 and "no vectors yet" not in again.stderr
