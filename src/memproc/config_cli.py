"""`memproc config check | show | schema`: look at the settings without starting anything.

None of them opens the database or loads a model: they read the same layers `serve` reads
(`config.read_layers`), so what they report is what `serve` would run with, and a file can be
checked on a machine where the service cannot start. Exit status 0, or 2 with the key named.
The parser lives in `cli.py`, which imports this module only when the command runs.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import msgspec

from memproc.config import Config, ConfigError, merge_layers, read_layers

SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
REDACTED = "***"
SOURCE_COLUMN = 30  # where `config show` starts the source comment
# A key whose name says it holds a credential: its value is never printed.
SECRET_KEY = re.compile(r"secret|passw(or)?d|token|api_?key|credential|private_?key|auth", re.I)
# A URL's password (`scheme://user:password@host`): the rest of the URL is worth seeing.
URL_PASSWORD = re.compile(r"(?P<head>[a-z][a-z0-9+.-]*://[^:/@\s]*:)[^@\s]*(?P<tail>@)", re.I)


def run(action: str, config_file: str | None, flags: dict[str, Any], as_json: bool = False) -> int:
    """`action` is check, show or schema; `flags` the settings given as flags (None: unset)."""
    if action == "schema":
        sys.stdout.buffer.write(config_schema())
        return 0
    try:
        config, sources = merge_layers(read_layers(config_file=config_file, flags=flags))
    except ConfigError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return 2
    if action == "check":
        print(f"OK: {_checked(config_file, sources)}")
        return 0
    rows = effective(config, sources)
    print(msgspec.json.encode(rows).decode() if as_json else render(rows))
    return 0


def _checked(config_file: str | None, sources: dict[str, str]) -> str:
    what = f"{config_file}, the environment and flags" if config_file else "environment and flags"
    keys = "1 key" if len(sources) == 1 else f"{len(sources)} keys"
    return f"{what} are valid ({keys} set, the rest defaults)"


def effective(config: Config, sources: dict[str, str]) -> dict[str, dict[str, Any]]:
    """Each key of Config, in declaration order: its value (redacted) and its source."""
    return {
        key: {"value": redact(key, getattr(config, key)), "source": sources.get(key, "default")}
        for key in config.__struct_fields__
    }


def redact(key: str, value: Any) -> Any:
    """Hide what could be a credential: the whole value of a key named like one, and the
    password of any URL (a database or endpoint URL may carry one), in lists too."""
    if value is None:
        return None
    if SECRET_KEY.search(key):
        return REDACTED
    if isinstance(value, str):
        return URL_PASSWORD.sub(rf"\g<head>{REDACTED}\g<tail>", value)
    if isinstance(value, list):
        return [redact(key, item) for item in value]
    return value


def render(rows: dict[str, dict[str, Any]]) -> str:
    """`key = value  # source`, values in JSON (TOML reads them alike; null: not set). The
    column is fixed, not fitted to the longest value, so the lines of one key read the same
    on every machine and can be grepped and compared."""
    lines = []
    for key, row in rows.items():
        setting = f"{key} = {msgspec.json.encode(row['value']).decode()}"
        lines.append(f"{setting.ljust(SOURCE_COLUMN)}  # {row['source']}")
    return "\n".join(lines)


def config_schema() -> bytes:
    """The settings file's JSON Schema, generated from Config as `memproc schema` generates
    the protocol's, so an editor can check a file against the same types `serve` decodes."""
    document = {
        "$schema": SCHEMA_DRAFT,
        "title": "memproc settings file (TOML)",
        **msgspec.json.schema(Config),
    }
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"
