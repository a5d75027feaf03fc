"""No request makes memproc read outside its database, model cache and the scope's project.

`stress_paths.run` traces a real server with strace (skipped where strace cannot trace) through
hostile requests and fuzz lines; see its docstring for what counts as a read and where reads may
land. The last test needs no strace: the process writes nothing in the user's home either.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from client import Spawn
from stress_paths import Event, Unavailable, parse_trace, run

# Slow: `make test` runs this module, `make test-fast` leaves it out.
pytestmark = pytest.mark.slow

FUZZ_LINES = 150


@pytest.fixture(scope="module")
def traced(tmp_path_factory: pytest.TempPathFactory, minilm_dir: Path) -> dict[str, Any]:
    try:
        return run(
            workdir=tmp_path_factory.mktemp("paths"),
            models_dir=minilm_dir.parent,
            fuzz_lines=FUZZ_LINES,
        )
    except Unavailable as exc:
        pytest.skip(f"the path check needs strace: {exc}")


def test_no_request_reads_outside_the_database_models_and_project(traced: dict[str, Any]) -> None:
    assert traced["outside_reads"] == []
    allowed = {"database", "models", "project", "python", "system", "temp file"}
    assert set(traced["reads_by_place"]) <= allowed


def test_the_trace_saw_the_requests_do_their_work(traced: dict[str, Any]) -> None:
    """Not vacuous: after start-up the server wrote its database and hashed the project files
    the references named, and resolved (without opening) the ones that lead outside."""
    assert traced["reads_by_place"].get("database", 0) > 0
    assert traced["project_files_read"] == ["README.md", "src/app.py"]
    resolved = " ".join(traced["outside_lookups"])
    assert "/etc/hostname" in resolved and "/etc/passwd" in resolved
    assert traced["hostile_answers"]["-32004"] > 0 and traced["hostile_answers"]["result"] > 0
    assert (traced["exit_status"], traced["integrity_check"]) == (0, "ok")


def _hex(text: str) -> str:
    return "".join(f"\\x{byte:02x}" for byte in text.encode())


def test_the_trace_parser_reads_every_shape_of_strace_line() -> None:
    """Padded pids (when pid widths differ), calls split by another thread, paths relative to
    a directory descriptor, AT_EMPTY_PATH, renames (two paths) and readlink (one)."""
    trace = "\n".join(
        [
            f'12345 openat(AT_FDCWD<{_hex("/w")}>, "{_hex("/etc/passwd")}", O_RDONLY) = 3',
            f'812   newfstatat(3<{_hex("/srv/p")}>, "{_hex("a/../b")}", {{...}}, 0) = 0',
            f'12345 openat(AT_FDCWD<{_hex("/w")}>, "{_hex("rel")}", O_RDONLY <unfinished ...>',
            "12345 <... openat resumed>) = 4",
            f'12345 newfstatat(4<{_hex("/w/rel")}>, "", {{...}}, AT_EMPTY_PATH) = 0',
            f'12345 rename("{_hex("/a")}", "{_hex("/b")}") = 0',
            f'12345 readlink("{_hex("/l")}", "{_hex("/target")}", 4096) = 7',
            f'12345 openat(AT_FDCWD<{_hex("/w")}>, "{_hex("/tmp")}", O_RDWR|O_TMPFILE, 0600) = 5',
            "12345 +++ exited with 0 +++",
        ]
    )
    assert parse_trace(trace) == [
        Event("openat", "/etc/passwd"),
        Event("newfstatat", "/srv/p/b"),
        Event("openat", "/w/rel"),
        Event("rename", "/a"),
        Event("rename", "/b"),
        Event("readlink", "/l"),
        Event("openat", "/tmp", tmpfile=True),
    ]


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
