"""Models in the real process: `serve --models-dir` loads them in the background and
`server.info` reports each one's state; a broken model never takes the process down."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path

from client import Spawn, assert_error

MODEL_TIMEOUT = 60.0  # loading MiniLM takes well under a second; this is only a hard ceiling


def models_with_minilm(tmp_path: Path, minilm_dir: Path) -> Path:
    models = tmp_path / "models"
    models.mkdir()
    (models / "minilm-l6-int8").symlink_to(minilm_dir, target_is_directory=True)
    return models


def test_the_installed_embedder_becomes_ready_and_the_reranker_is_absent(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    server = spawn("--models-dir", str(models_with_minilm(tmp_path, minilm_dir)))
    embedder = server.wait_component("embedder", MODEL_TIMEOUT)
    assert embedder["state"] == "ready", embedder
    assert embedder["reason"] is None
    assert embedder["detail"]["name"] == "minilm-l6-int8"
    components = server.result("server.info")["components"]
    assert components["reranker"]["state"] == "absent"
    assert components["reranker"]["reason"] == "no reranker installed"
    # The store opens beside the model, not before it (a server store takes longer than a file).
    assert server.wait_component("store", MODEL_TIMEOUT)["state"] == "ready"


def test_embedder_none_leaves_installed_models_alone(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    models = models_with_minilm(tmp_path, minilm_dir)
    server = spawn("--models-dir", str(models), "--embedder", "none")
    components = server.result("server.info")["components"]
    assert components["embedder"]["state"] == "absent"
    assert components["embedder"]["reason"] == "no embedder configured"


def test_with_an_empty_models_dir_both_models_are_absent(spawn: Spawn, tmp_path: Path) -> None:
    empty = tmp_path / "empty-models"
    empty.mkdir()
    server = spawn("--models-dir", str(empty))
    components = server.result("server.info")["components"]
    assert components["embedder"] == {
        "state": "absent",
        "reason": f"no embedder installed in {empty}: search is lexical only",
        "detail": {},
        "fix": f"memproc models pull minilm-l6-int8 --models-dir {empty}",
    }
    assert components["reranker"]["state"] == "absent"
    assert components["reranker"].get("fix") is None  # only the default embedder is pulled


def test_a_missing_embedder_is_named_once_on_stderr_with_the_command_that_fixes_it(
    spawn: Spawn, tmp_path: Path
) -> None:
    """A first run without a model must not pass silently as lexical-only search: one log
    line says so and names the pull; searching afterwards does not repeat it."""
    empty = tmp_path / "empty models"  # a space: the command must quote the directory
    empty.mkdir()
    server = spawn("--models-dir", str(empty), "--embedder", "auto")
    fix = server.result("server.info")["components"]["embedder"]["fix"]
    assert shlex.split(fix) == [
        "memproc", "models", "pull", "minilm-l6-int8", "--models-dir", str(empty)
    ]  # fmt: skip
    for _ in range(2):
        server.result("memory.search", {"scope": "s", "query": "anything"})
    assert server.finish() == 0
    lines = [json.loads(line) for line in server.stderr_text().splitlines() if line.strip()]
    hints = [line for line in lines if line.get("fix") == fix]
    assert len(hints) == 1, lines
    assert hints[0]["level"] == "warning"
    assert fix in hints[0]["msg"]


def test_by_default_contract_servers_see_no_models(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    """The client helper gives every server an empty models directory unless asked, so a model
    in the user's cache (here: a fake home cache holding MiniLM) is not picked up."""
    home_cache = tmp_path / "xdg-cache"
    (home_cache / "memproc").mkdir(parents=True)
    models_with_minilm(home_cache / "memproc", minilm_dir)
    components = spawn(env={"XDG_CACHE_HOME": str(home_cache)}).result("server.info")["components"]
    assert components["embedder"]["state"] == "absent"
    assert components["reranker"]["state"] == "absent"


def test_a_corrupted_model_fails_with_a_reason_and_the_process_keeps_serving(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    models = tmp_path / "models"
    copy = models / "minilm-l6-int8"
    copy.mkdir(parents=True)
    for name in ("memproc-model.json", "model.onnx", "tokenizer.json"):
        shutil.copyfile(minilm_dir / name, copy / name)
    data = bytearray((copy / "model.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (copy / "model.onnx").write_bytes(bytes(data))

    server = spawn("--models-dir", str(models))
    embedder = server.wait_component("embedder", MODEL_TIMEOUT)
    assert embedder["state"] == "failed", embedder
    assert embedder["reason"].startswith("hash_mismatch:")
    assert "model.onnx" in embedder["reason"]
    assert embedder["detail"]["name"] == "minilm-l6-int8"
    server.ping()
    remembered = server.result(
        "memory.remember", {"scope": "s", "kind": "note", "content": "still serving"}
    )
    found = server.result("memory.search", {"scope": "s", "query": "serving", "mode": "lexical"})
    assert [hit["id"] for hit in found["results"]] == [remembered["id"]]
    dense = server.call("memory.search", {"scope": "s", "query": "serving", "mode": "dense"})
    data = assert_error(dense, -32001)
    assert data["retryable"] is False
    assert data["component"] == "embedder"
    assert data["reason"].startswith("hash_mismatch:")
