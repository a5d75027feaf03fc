"""`memproc config check | show | schema` as a user runs them: real processes, real files.

The README's examples under "## Configuration commands" are run exactly as printed (a `$ `
line is a command for bash, the lines after it what it prints, stderr included), so they
cannot rot.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
from client import clean_env

from memproc.config import Config
from memproc.config_cli import REDACTED, redact

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent  # the venv running the tests: its `memproc` script


def memproc(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return python("-m", "memproc", *args, cwd=cwd, env=env)


def python(
    *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=clean_env(**(env or {})),
        capture_output=True,
        text=True,
        timeout=60,
    )


def write(directory: Path, name: str, text: str) -> Path:
    path = directory / name
    path.write_text(text)
    return path


# -- the README's examples -------------------------------------------------------------------


def readme_section(heading: str) -> str:
    section = README.read_text().split(f"\n{heading}\n", 1)[1]
    return section.split("\n## ", 1)[0]


def transcripts(section: str) -> list[tuple[str, list[str]]]:
    """(command, the lines it prints) for each `$ ` line of the section's ```sh blocks."""
    found: list[tuple[str, list[str]]] = []
    for block in re.findall(r"```sh\n(.*?)```", section, re.DOTALL):
        for line in block.splitlines():
            if line.startswith("$ "):
                found.append((line[2:], []))
            else:
                found[-1][1].append(line)
    return found


def test_the_readme_configuration_examples_print_what_they_say(tmp_path: Path) -> None:
    section = readme_section("## Configuration commands")
    toml = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert toml is not None, "the section shows its memproc.toml"
    write(tmp_path, "memproc.toml", toml.group(1))
    examples = transcripts(section)
    shown = {re.search(r"memproc config (\w+)", command) for command, _ in examples}
    assert {match.group(1) for match in shown if match} == {"check", "show", "schema"}
    env = clean_env(PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    for command, expected in examples:
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=60,
        )
        assert done.stdout.splitlines() == expected, command


# -- config check ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("toml", "named"),
    [
        ("workers = 2\nmax_pendng = 10\n", "`max_pendng`, did you mean `max_pending`?"),
        ("colour = 'blue'\n", "`colour`"),  # nothing close: no guess
    ],
)
def test_check_names_an_unknown_key_and_the_closest_valid_one(
    tmp_path: Path, toml: str, named: str
) -> None:
    path = write(tmp_path, "memproc.toml", toml)
    done = memproc("config", "check", "--config", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stdout == ""
    assert f"unknown setting in {path}: {named}" in done.stderr
    assert done.stderr.count("did you mean") == named.count("did you mean")


@pytest.mark.parametrize(
    ("toml", "key"),
    [
        ('workers = "four"', "workers"),  # wrong type
        ("workers = 65", "workers"),  # out of range
        ('fusion = "sum"', "fusion"),  # not one of the choices
        ("min_confidence = 1.5", "min_confidence"),
    ],
)
def test_check_rejects_a_bad_value_naming_the_key(tmp_path: Path, toml: str, key: str) -> None:
    path = write(tmp_path, "memproc.toml", toml + "\n")
    done = memproc("config", "check", "--config", str(path), cwd=tmp_path)
    assert done.returncode == 2
    assert f"`{key}`" in done.stderr


def test_check_reads_the_environment_and_flags_too(tmp_path: Path) -> None:
    bad_env = memproc("config", "check", cwd=tmp_path, env={"MEMPROC_WORKERS": "0"})
    assert bad_env.returncode == 2
    assert "`workers`" in bad_env.stderr
    bad_flag = memproc("config", "check", "--max-pending", "0", cwd=tmp_path)
    assert bad_flag.returncode == 2
    assert "`max_pending`" in bad_flag.stderr


def test_check_passes_a_good_file_with_one_line(tmp_path: Path) -> None:
    toml = write(tmp_path, "memproc.toml", 'workers = 8\nfusion = "zscore"\n')
    done = memproc("config", "check", "--config", str(toml), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("OK: ")
    assert len(done.stdout.splitlines()) == 1


def test_check_of_an_unreadable_or_invalid_file_is_a_clear_error(tmp_path: Path) -> None:
    missing = memproc("config", "check", "--config", str(tmp_path / "nope.toml"), cwd=tmp_path)
    assert missing.returncode == 2
    assert "cannot read config file" in missing.stderr
    broken = write(tmp_path, "broken.toml", "workers = = 2\n")
    done = memproc("config", "check", "--config", str(broken), cwd=tmp_path)
    assert done.returncode == 2
    assert "not valid TOML" in done.stderr


def test_neither_check_nor_show_opens_the_database_or_loads_a_model(tmp_path: Path) -> None:
    """Run in one process, then asked what it imported: serve would create the database and
    import onnxruntime; these must do neither, so they work where the service cannot."""
    db = tmp_path / "memory.db"
    probe = (
        "import sys\n"
        "from memproc.cli import main\n"
        f"assert main(['config', 'check', '--db', {str(db)!r}]) == 0\n"
        f"assert main(['config', 'show', '--db', {str(db)!r}]) == 0\n"
        "loaded = [m for m in ('apsw', 'onnxruntime', 'memproc.store', 'memproc.models.embedder')"
        " if m in sys.modules]\n"
        "print('loaded:', loaded, file=sys.stderr)\n"
    )
    done = python("-c", probe, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "loaded: []" in done.stderr
    assert not db.exists()


# -- config show -----------------------------------------------------------------------------


def test_show_says_where_each_value_came_from(tmp_path: Path) -> None:
    toml = write(tmp_path, "memproc.toml", "workers = 8\nmax_pending = 100\n")
    done = memproc(
        "config",
        "show",
        "--json",
        "--config",
        str(toml),
        "--max-pending",
        "50",
        cwd=tmp_path,
        env={"MEMPROC_LOG_LEVEL": "debug", "MEMPROC_WORKERS": "6"},
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert list(rows) == list(Config.__struct_fields__)  # every key, in declaration order
    assert rows["workers"] == {"value": 6, "source": "environment"}  # env beats the file
    assert rows["max_pending"] == {"value": 50, "source": "flag"}  # a flag beats the file
    assert rows["log_level"] == {"value": "debug", "source": "environment"}
    assert rows["fusion"] == {"value": "zscore", "source": "default"}
    assert rows["models_dir"]["source"] == "default"


def test_show_prints_the_same_values_as_text(tmp_path: Path) -> None:
    toml = write(tmp_path, "memproc.toml", "workers = 8\n")
    done = memproc("config", "show", "--config", str(toml), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == len(Config.__struct_fields__)
    assert re.fullmatch(r"workers = 8 +# file", lines[Config.__struct_fields__.index("workers")])
    assert re.fullmatch(
        r"project = null +# default", lines[Config.__struct_fields__.index("project")]
    )


def test_show_redacts_the_password_of_a_url(tmp_path: Path) -> None:
    toml = write(tmp_path, "memproc.toml", 'db = "postgres://me:hunter2@db.internal/mem"\n')
    done = memproc("config", "show", "--config", str(toml), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "hunter2" not in done.stdout
    assert f'db = "postgres://me:{REDACTED}@db.internal/mem"' in done.stdout


@pytest.mark.parametrize(
    ("key", "value", "shown"),
    [
        ("api_token", "abc", REDACTED),
        ("db_password", "abc", REDACTED),
        ("client_secret", ["a", "b"], REDACTED),
        ("endpoint", "https://u:p@host/x", f"https://u:{REDACTED}@host/x"),
        ("scopes", ["plain", "s3://k:s@b/"], ["plain", f"s3://k:{REDACTED}@b/"]),
        ("endpoint", "https://host:8080/x", "https://host:8080/x"),  # a port is no password
        ("workers", 4, 4),
        ("project", None, None),
    ],
)
def test_redaction_hides_what_could_be_a_credential(key: str, value: object, shown: object) -> None:
    """No setting of today is a secret: this is the guard for the first one that is."""
    assert redact(key, value) == shown


# -- config schema ---------------------------------------------------------------------------


def test_schema_describes_every_key_and_rejects_unknown_ones(tmp_path: Path) -> None:
    done = memproc("config", "schema", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    schema = json.loads(done.stdout)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    config = schema["$defs"]["Config"]
    assert set(config["properties"]) == set(Config.__struct_fields__)
    assert config["additionalProperties"] is False
    assert config["properties"]["workers"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 64,
        "default": 4,
    }
    assert schema["$defs"] == msgspec.json.schema(Config)["$defs"]
