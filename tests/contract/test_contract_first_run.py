"""A fresh clone's `make serve` searches semantically, and `.venv` is the pinned environment.

`make serve` is run for real, as the README's "## First run" prints it, against the model cache
the suite has already pulled (so the pull step only re-verifies it: nothing is downloaded
here), with the database in a temporary directory. `-o .venv/.installed` keeps make from
rebuilding the venv these tests run in, should pyproject.toml or constraints.txt be newer.
"""

from __future__ import annotations

import re
import subprocess
from importlib import metadata
from pathlib import Path

from client import Client, check_stream, clean_env

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
KEEP_VENV = ["-o", ".venv/.installed"]
MODEL_TIMEOUT = 120.0  # MiniLM loads in about a second; a hard ceiling for a loaded machine


def make_dry_run(*args: str) -> list[list[str]]:
    done = subprocess.run(
        ["make", "-n", *KEEP_VENV, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    commands = done.stdout.replace("\\\n", " ").splitlines()  # a recipe line continued
    return [line.split("||")[0].split() for line in commands if "memproc " in line]


def test_make_serve_pulls_the_default_model_into_the_cache_it_then_serves() -> None:
    pull, serve = make_dry_run("serve", "MODELS_DIR=/cache/models", "DB=/data/memory.db")
    assert pull[1:] == ["models", "pull", "minilm-l6-int8", "--models-dir", "/cache/models", ">&2"]
    assert serve[1:] == ["serve", "--db", "/data/memory.db", "--models-dir", "/cache/models"]


def test_without_a_directory_the_pull_and_the_service_use_the_same_default() -> None:
    """No flag on either: both resolve $MEMPROC_MODELS or ~/.cache/memproc/models through the
    same config code, so the pulled model is the one `auto` finds."""
    pull, serve = make_dry_run("serve")
    assert pull[1:] == ["models", "pull", "minilm-l6-int8", ">&2"]
    assert serve[1:] == ["serve"]


def readme_first_run_command() -> str:
    section = README.read_text().split("\n## First run\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```sh\n\$ (.*)\n```", section)
    assert match is not None, "the section shows the command"
    return match.group(1)


def test_the_readme_first_run_serves_a_hybrid_search_with_a_dense_channel(
    tmp_path: Path, minilm_dir: Path
) -> None:
    command = readme_first_run_command()
    assert command == "make serve"
    argv = ["make", "--no-print-directory", "-C", str(ROOT), *KEEP_VENV, *command.split()[1:]]
    env = clean_env(
        MEMPROC_MODELS=str(minilm_dir.parent),
        MEMPROC_DB=str(tmp_path / "memory.db"),
        MEMPROC_RERANKER="none",
    )
    server = Client(argv, stderr_path=tmp_path / "stderr.log", env=env, name="make-serve")
    try:
        assert server.wait_component("embedder", MODEL_TIMEOUT)["state"] == "ready"
        saved = server.result(
            "memory.remember",
            {"scope": "s", "kind": "fact", "content": "Deploys go through staging first"},
        )
        search = server.result(
            "memory.search", {"scope": "s", "query": "how do releases ship", "explain": True}
        )
        assert server.finish() == 0
        # Nothing but protocol messages on stdout: make's echo and the pull's output are not.
        check_stream(server)
        stderr = server.stderr_text()
    finally:
        server.close()
    assert "minilm-l6-int8: already installed and verified" in stderr  # an idempotent pull
    assert search["mode"] == "hybrid"
    assert search["degraded"] is None
    top = search["results"][0]
    assert (top["id"], top["ranks"].get("dense"), top["ranks"].get("lexical")) == (
        saved["id"],
        1,
        None,  # no shared word: only the dense channel can find it
    )
    assert (tmp_path / "memory.db").exists()


# -- the pinned environment ------------------------------------------------------------------


def normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins() -> dict[str, str]:
    found = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            assert version, f"not an exact pin: {line}"
            found[normalized(name)] = version
    return found


def test_the_venv_holds_exactly_the_pinned_versions() -> None:
    """The install step uses `-c constraints.txt`: every package in the venv (but the tools
    that build it and memproc itself) is pinned, at the version installed. Fails when a
    dependency changed without `make constraints`."""
    installed = {
        normalized(dist.metadata["Name"]): dist.version
        for dist in metadata.distributions()
        if normalized(dist.metadata["Name"]) not in {"pip", "setuptools", "wheel", "memproc"}
    }
    assert installed == pins()


def test_the_install_step_uses_the_constraints() -> None:
    done = subprocess.run(
        ["make", "-n", "-W", "constraints.txt", ".venv/.installed"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "pip install --quiet -c constraints.txt -e '.[test,postgres]'" in done.stdout


def test_a_failed_pull_still_serves_and_says_what_is_missing(tmp_path: Path) -> None:
    """Offline, or a cache that cannot be written: the service starts anyway, lexical only,
    and names the command to run later. (A file where the cache should be fails the pull
    before any download is tried.)"""
    not_a_dir = tmp_path / "models"
    not_a_dir.write_text("")
    argv = ["make", "--no-print-directory", "-C", str(ROOT), *KEEP_VENV, "serve",
            f"MODELS_DIR={not_a_dir}", f"DB={tmp_path / 'memory.db'}"]  # fmt: skip
    server = Client(argv, stderr_path=tmp_path / "stderr.log", env=clean_env(), name="make-serve")
    try:
        embedder = server.result("server.info")["components"]["embedder"]
        assert server.finish() == 0
        check_stream(server)
        stderr = server.stderr_text()
    finally:
        server.close()
    assert "make serve: could not pull minilm-l6-int8; serving without it" in stderr
    assert embedder["state"] == "absent"
    assert embedder["fix"] == f"memproc models pull minilm-l6-int8 --models-dir {not_a_dir}"
