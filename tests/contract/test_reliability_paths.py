"""No request makes memproc read outside its database, model cache and the scope's project.

The process writes nothing in the user's home either, even while loading a model.
"""

from __future__ import annotations

import os
from pathlib import Path

from client import Spawn


def test_loading_a_model_writes_nothing_in_the_home_directory(
    spawn: Spawn, tmp_path: Path, minilm_dir: Path
) -> None:
    """onnxruntime 1.29+ records telemetry on Linux too, in ~/.cache/Microsoft/DeveloperTools
    (queued for upload to Microsoft) unless ORT_DISABLE_TELEMETRY is set before it starts."""
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "XDG_CACHE_HOME": str(home / ".cache")}
    server = spawn("--models-dir", str(minilm_dir.parent), env=env)
    assert server.wait_component("embedder", timeout=60)["state"] == "ready"
    remembered = server.call("memory.remember", {"scope": "s", "kind": "note", "content": "x"})
    assert "result" in remembered
    assert server.finish() == 0
    assert sorted(os.listdir(home)) == []
