"""Configuration: file < environment < flags, and every bad setting is named."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest

from memproc.config import Config, ConfigError, default_models_dir, load_config, read_env


def write_toml(tmp_path: Path, text: str) -> str:
    path = tmp_path / "memproc.toml"
    path.write_text(text)
    return str(path)


def test_defaults_with_nothing_set() -> None:
    expected = msgspec.structs.replace(Config(), models_dir=default_models_dir())
    assert load_config(environ={}) == expected


def test_models_dir_follows_xdg_cache_home_and_memproc_models(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert load_config(environ={}).models_dir == str(tmp_path / "memproc" / "models")
    chosen = str(tmp_path / "elsewhere")
    assert load_config(environ={"MEMPROC_MODELS": chosen}).models_dir == chosen


def test_precedence_is_file_then_environment_then_flags(tmp_path: Path) -> None:
    toml = write_toml(tmp_path, 'workers = 2\nmax_pending = 10\nlog_level = "debug"\n')
    environ = {"MEMPROC_MAX_PENDING": "20", "MEMPROC_LOG_LEVEL": "warning"}
    config = load_config(config_file=toml, environ=environ, flags={"log_level": "error"})
    assert (config.workers, config.max_pending, config.log_level) == (2, 20, "error")


def test_flags_that_are_none_do_not_override(tmp_path: Path) -> None:
    toml = write_toml(tmp_path, "workers = 3\n")
    config = load_config(config_file=toml, environ={}, flags={"workers": None, "db": None})
    assert config.workers == 3
    assert config.db == "memory.db"


def test_environment_values_are_converted_to_their_types() -> None:
    environ = {"MEMPROC_WORKERS": "7", "MEMPROC_SHUTDOWN_DEADLINE_S": "1.5"}
    config = load_config(environ=environ)
    assert config.workers == 7
    assert config.shutdown_deadline_s == 1.5


def test_environment_variables_without_the_prefix_are_ignored() -> None:
    assert read_env({"WORKERS": "9", "PATH": "/bin", "MEMPRO_X": "1"}) == {}


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('["a", "/b"]', ["a", "/b"]),
        ("  []", []),
        ("single", ["single"]),
        ("/some/path", ["/some/path"]),
    ],
)
def test_memproc_scopes_is_a_json_array_or_one_value(value: str, expected: list[str]) -> None:
    assert load_config(environ={"MEMPROC_SCOPES": value}).scopes == expected


def test_memproc_scopes_bad_json_array_names_the_key() -> None:
    with pytest.raises(ConfigError, match="scopes"):
        load_config(environ={"MEMPROC_SCOPES": '["a", '})
    with pytest.raises(ConfigError, match="scopes"):
        load_config(environ={"MEMPROC_SCOPES": "[1, 2]"})


def test_unknown_key_in_file_fails_naming_it(tmp_path: Path) -> None:
    toml = write_toml(tmp_path, "workers = 2\nwrokers = 3\n")
    with pytest.raises(ConfigError, match="wrokers") as caught:
        load_config(config_file=toml, environ={})
    assert toml in str(caught.value)


def test_unknown_key_in_environment_fails_naming_it() -> None:
    with pytest.raises(ConfigError, match="MEMPROC_BOGUS"):
        load_config(environ={"MEMPROC_BOGUS": "1"})


def test_unknown_flag_key_fails_naming_it() -> None:
    with pytest.raises(ConfigError, match="colour"):
        load_config(environ={}, flags={"colour": "blue"})


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('workers = "4"', "workers"),
        ("db = 5", "db"),
        ('scopes = "a"', "scopes"),
        ("max_pending = 1.5", "max_pending"),
        ("shutdown_deadline_s = true", "shutdown_deadline_s"),
        ('log_level = "verbose"', "log_level"),
        ('synchronous = "off"', "synchronous"),
    ],
)
def test_wrong_type_in_file_fails_naming_the_key(tmp_path: Path, toml: str, key: str) -> None:
    with pytest.raises(ConfigError, match=f"`{key}`"):
        load_config(config_file=write_toml(tmp_path, toml), environ={})


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("workers", 0),
        ("workers", 65),
        ("max_pending", 0),
        ("max_line_bytes", 1023),
        ("max_content_chars", 0),
        ("max_metadata_bytes", 1),
        ("busy_timeout_ms", -1),
        ("shutdown_deadline_s", 0),
    ],
)
def test_out_of_range_fails_naming_the_key(tmp_path: Path, key: str, value: int) -> None:
    with pytest.raises(ConfigError, match=f"`{key}`"):
        load_config(config_file=write_toml(tmp_path, f"{key} = {value}"), environ={})
    with pytest.raises(ConfigError, match=f"`{key}`"):
        load_config(environ={f"MEMPROC_{key.upper()}": str(value)})
    with pytest.raises(ConfigError, match=f"`{key}`"):
        load_config(environ={}, flags={key: value})


def test_wrong_type_in_environment_fails_naming_the_key() -> None:
    with pytest.raises(ConfigError, match="`workers`"):
        load_config(environ={"MEMPROC_WORKERS": "many"})


def test_boundary_values_are_accepted() -> None:
    config = load_config(environ={}, flags={"workers": 64, "max_line_bytes": 1024})
    assert (config.workers, config.max_line_bytes) == (64, 1024)


def test_invalid_toml_gives_a_clear_error(tmp_path: Path) -> None:
    toml = write_toml(tmp_path, "workers = = 2\n")
    with pytest.raises(ConfigError, match="not valid TOML") as caught:
        load_config(config_file=toml, environ={})
    assert toml in str(caught.value)


def test_missing_config_file_gives_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_config(config_file=str(tmp_path / "absent.toml"), environ={})


def test_project_resolves_to_a_realpath(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    config = load_config(environ={}, flags={"project": str(tmp_path / "link" / ".." / "real")})
    assert config.project == os.path.realpath(real)
    config = load_config(environ={"MEMPROC_PROJECT": str(tmp_path / "link")})
    assert config.project == os.path.realpath(real)


def test_project_relative_path_becomes_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "proj").mkdir()
    monkeypatch.chdir(tmp_path)
    config = load_config(environ={}, flags={"project": "proj"})
    assert config.project == os.path.realpath(tmp_path / "proj")


def test_project_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="project"):
        load_config(environ={}, flags={"project": str(tmp_path / "file")})
    with pytest.raises(ConfigError, match="project"):
        load_config(environ={}, flags={"project": str(tmp_path / "missing")})


# -- the real command line ----------------------------------------------------------------


def run_serve(
    tmp_path: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("MEMPROC_")}
    environ.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "memproc", "serve", "--db", str(tmp_path / "m.db"), *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        env=environ,
        cwd=tmp_path,
        timeout=60,
        check=False,
    )


def test_serve_with_out_of_range_flag_exits_2_naming_the_key(tmp_path: Path) -> None:
    done = run_serve(tmp_path, "--workers", "0")
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"workers" in done.stderr
    assert not (tmp_path / "m.db").exists()


def test_serve_with_unknown_environment_key_exits_2_naming_it(tmp_path: Path) -> None:
    done = run_serve(tmp_path, env={"MEMPROC_BOGUS": "1"})
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"MEMPROC_BOGUS" in done.stderr


def test_serve_with_bad_config_file_exits_2_naming_the_key(tmp_path: Path) -> None:
    toml = write_toml(tmp_path, "max_pending = 0\n")
    done = run_serve(tmp_path, "--config", toml)
    assert done.returncode == 2
    assert done.stdout == b""
    assert b"max_pending" in done.stderr


def test_a_keyword_connection_string_is_refused_rather_than_made_a_file(tmp_path: Path) -> None:
    from memproc.errors import StorageUnavailable
    from memproc.store import open_store

    db = "host=127.0.0.1 dbname=mem user=me"
    with pytest.raises(StorageUnavailable) as raised:
        open_store(Config(db=db))
    assert raised.value.data["reason"] == "bad_url"
    assert not (Path.cwd() / db).exists()
