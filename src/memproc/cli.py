"""Command line: `memproc serve` runs the JSONL service; `memproc schema` writes `schemas/` (and
the Python client's method constants); `memproc models` manages the model cache; `memproc
config` checks and explains the settings (`config_cli.py`); `memproc ui` serves a local web page
over a store.

Exit codes: 0 success, 1 the operation failed (a download, a hash, a model that does not
verify), 2 bad usage or configuration. Progress and messages go to stderr; stdout carries only
results (the table of `models list`, the directory a model was installed in).
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from typing import Any

from memproc import __version__
from memproc.config import Config, ConfigError, load_config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memproc", description=__doc__)
    parser.add_argument("--version", action="version", version=f"memproc {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve JSON-RPC over stdin/stdout")
    _add_setting_flags(serve)
    serve.add_argument(
        "--mcp", action="store_true", help="speak the Model Context Protocol (stdio) instead"
    )

    schema = commands.add_parser(
        "schema", help="write JSON Schema files and the Python client's method constants"
    )
    schema.add_argument("--out", default="schemas", help="output directory (default ./schemas)")
    schema.add_argument(
        "--check", action="store_true", help="exit 1 if the directory differs from the code"
    )
    _add_models_parser(commands)
    _add_config_parser(commands)
    index_options = argparse.ArgumentParser(add_help=False)
    index_options.add_argument("--db", help="SQLite database file (default ./memory.db)")
    index_options.add_argument("--models-dir", help=MODELS_DIR_HELP)
    index_options.add_argument("--config", help="TOML settings file")
    index = commands.add_parser("index", help="verify or rebuild the search indexes")
    actions = index.add_subparsers(dest="action", required=True)
    actions.add_parser("verify", parents=[index_options], help="report drift; exit 1 if any")
    actions.add_parser(
        "rebuild", parents=[index_options], help="rebuild FTS, drop drifted vectors, re-embed"
    )
    _add_data_parsers(commands)
    _add_migrate_parsers(commands)
    _add_query_parsers(commands)
    _add_ui_parser(commands)
    return parser


def _add_ui_parser(commands: Any) -> None:
    """`ui` (ui/server.py): a local web page over a store."""
    ui = commands.add_parser(
        "ui", help="browse a store in a web browser (127.0.0.1, behind a one-time token)"
    )
    ui.add_argument("--db", help="SQLite database file (default ./memory.db)")
    ui.add_argument("--models-dir", help=MODELS_DIR_HELP)
    ui.add_argument("--config", help="TOML settings file")
    ui.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: a free one)")


def _add_query_parsers(commands: Any) -> None:
    """`search` and `list` (query_cli.py): read a store from the command line."""
    shared = argparse.ArgumentParser(add_help=False)
    shared.add_argument("--db", help="SQLite database file (default ./memory.db)")
    shared.add_argument("--scope", required=True, help="the scope to read")
    shared.add_argument(
        "--format", choices=("json", "table"), default="json", help="output (default json)"
    )
    shared.add_argument("--config", help="TOML settings file")
    search = commands.add_parser(
        "search", parents=[shared], help="search a scope's memories (memory.search)"
    )
    search.add_argument("query", help="what to look for, in any words")
    search.add_argument("--mode", choices=("hybrid", "lexical", "dense"), default="hybrid")
    search.add_argument("--limit", type=int, default=10, help="results (1-100, default 10)")
    search.add_argument("--models-dir", help=MODELS_DIR_HELP)
    listing = commands.add_parser(
        "list", parents=[shared], help="a scope's memories, newest first (memory.list)"
    )
    listing.add_argument("--kind", action="append", dest="kinds", help="only this kind")
    listing.add_argument("--limit", type=int, default=50, help="memories (default 50)")


def _add_data_parsers(commands: Any) -> None:
    """`export`, `import`, `backup` (data_cli.py) and `doctor` (doctor_cli.py)."""
    db = argparse.ArgumentParser(add_help=False)
    db.add_argument("--db", help="SQLite database file (default ./memory.db)")
    export = commands.add_parser("export", parents=[db], help="write a scope's records as JSONL")
    which = export.add_mutually_exclusive_group(required=True)
    which.add_argument("--scope", help="the scope to export")
    which.add_argument("--all", action="store_true", help="every scope")
    export.add_argument("file", help="the JSONL file to write")
    restore = commands.add_parser(
        "import", parents=[db], help="add an export's records to a store (idempotent)"
    )
    restore.add_argument("file", help="a file written by `memproc export`")
    backup = commands.add_parser(
        "backup", parents=[db], help="a consistent copy of the database, taken online"
    )
    backup.add_argument("file", help="the new database file")
    doctor = commands.add_parser(
        "doctor", parents=[db], help="check the database, models, configuration, environment"
    )
    doctor.add_argument("--models-dir", help=MODELS_DIR_HELP)
    doctor.add_argument("--config", help="TOML settings file")
    doctor.add_argument("--json", action="store_true", help="a JSON report on stdout")


def _add_migrate_parsers(commands: Any) -> None:
    """`migrate` (migrate_cli.py), `purge` and `vacuum` (purge_cli.py)."""
    migrate = commands.add_parser(
        "migrate", help="move a whole store, vectors included, into an empty one (verified)"
    )
    migrate.add_argument(
        "--from", dest="source", required=True, help="sqlite:PATH or postgresql://... URL"
    )
    migrate.add_argument(
        "--to", dest="dest", required=True, help="sqlite:PATH or postgresql://... URL (empty)"
    )
    migrate.add_argument("--config", help="TOML settings file (thread windows, timeouts)")
    migrate.add_argument("--json", action="store_true", help="the summary as one JSON object")
    store = argparse.ArgumentParser(add_help=False)
    store.add_argument("--db", help="SQLite database file or postgresql:// URL")
    store.add_argument("--config", help="TOML settings file")
    purge = commands.add_parser(
        "purge", parents=[store], help="erase a memory's content for good (memory.purge)"
    )
    purge.add_argument("--scope", required=True, help="the memory's scope")
    purge.add_argument("--id", required=True, help="the memory's id")
    purge.add_argument("--reason", required=True, help="kept in the log: do not quote the secret")
    purge.add_argument(
        "--vacuum", action="store_true", help="then reclaim old row versions (see `vacuum`)"
    )
    commands.add_parser(
        "vacuum",
        parents=[store],
        help="after purges: rewrite the tables a purge touches (PostgreSQL VACUUM FULL)",
    )


MODELS_DIR_HELP = "model cache directory (default: $MEMPROC_MODELS or ~/.cache/memproc/models)"
# The settings a flag may set, as Config keys (the dest of each flag `_add_setting_flags` adds).
SETTING_FLAGS = (
    "db",
    "project",
    "scopes",
    "workers",
    "max_pending",
    "max_line_bytes",
    "log_level",
    "models_dir",
    "embedder",
    "reranker",
)


def _add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """Shared by `serve` and `config check | show`, so the commands that explain a
    configuration accept exactly what the service accepts."""
    parser.add_argument("--config", help="TOML settings file")
    parser.add_argument("--db", help="SQLite database file (default ./memory.db)")
    parser.add_argument(
        "--project", help="project directory: its canonical path is the default scope"
    )
    parser.add_argument(
        "--scope", action="append", dest="scopes", help="allow only this scope (repeatable)"
    )
    parser.add_argument("--workers", type=int, help="worker threads")
    parser.add_argument("--max-pending", type=int, help="queued requests before -32011")
    parser.add_argument("--max-line-bytes", type=int, help="longest accepted request line")
    parser.add_argument("--log-level", help="debug, info, warning or error")
    parser.add_argument("--models-dir", help=MODELS_DIR_HELP)
    parser.add_argument("--embedder", help='embedder to load: a model name, "auto" or "none"')
    parser.add_argument("--reranker", help='reranker to load: a model name, "auto" or "none"')


def _setting_flags(args: argparse.Namespace) -> dict[str, Any]:
    """The flag layer of the settings: None where a flag was not given."""
    return {key: getattr(args, key) for key in SETTING_FLAGS}


def _add_config_parser(commands: Any) -> None:
    config = commands.add_parser("config", help="check, show or describe the settings")
    actions = config.add_subparsers(dest="action", required=True)
    check = actions.add_parser("check", help="validate the file, environment and flags")
    _add_setting_flags(check)
    show = actions.add_parser("show", help="every effective setting and where it came from")
    _add_setting_flags(show)
    show.add_argument("--json", action="store_true", help="one JSON object, for machines")
    actions.add_parser("schema", help="print the JSON Schema of the TOML settings file")


def _add_models_parser(commands: Any) -> None:
    models = commands.add_parser("models", help="list, pull, install or verify models")
    actions = models.add_subparsers(dest="action", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--models-dir", help=MODELS_DIR_HELP)
    common.add_argument("--config", help="TOML settings file")
    actions.add_parser("list", parents=[common], help="installed models and the ones to pull")
    pull = actions.add_parser("pull", parents=[common], help="build a model from the catalog")
    pull.add_argument("name", help="catalog name, e.g. minilm-l6-int8")
    pull.add_argument(
        "--endpoint",
        default=None,
        help="model repository base URL (default: the catalog's, the Hugging Face hub)",
    )
    install = actions.add_parser(
        "install", parents=[common], help="copy a model directory with a manifest into the cache"
    )
    install.add_argument("directory")
    actions.add_parser("verify", parents=[common], help="re-hash every installed model")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "schema":
        return _schema(args)
    if args.command == "models":
        return _models(args)
    if args.command == "index":
        return _index(args)
    if args.command in ("export", "import", "backup", "doctor"):
        return _data(args)
    if args.command in ("search", "list"):
        return _query(args)
    if args.command in ("migrate", "purge", "vacuum"):
        return _migrate_or_purge(args)
    if args.command == "config":
        from memproc import config_cli

        flags = _setting_flags(args) if args.action != "schema" else {}
        config_file = getattr(args, "config", None)
        return config_cli.run(args.action, config_file, flags, getattr(args, "json", False))
    if args.command == "ui":
        return _ui(args)
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    # Claim stdout for the protocol before anything else can print to it: replies go to a
    # private duplicate of fd 1, and fd 1 itself now points at stderr.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    flags = _setting_flags(args)
    try:
        config = load_config(config_file=args.config, flags=flags)
    except ConfigError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return 2
    from memproc.logs import configure_logging
    from memproc.runtime import Runtime
    from memproc.server.service import Service

    configure_logging(config.log_level)
    runtime = Runtime(config)
    service = Service(runtime, in_fd=0, out_fd=protocol_fd, dialect=_dialect(args))
    status = service.run(on_serving=runtime.start)
    # Everything owed is answered. Python resets handled signals to their default action while
    # it tears down, so a SIGTERM arriving now would turn this exit 0 into death by signal.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if service.left_running:
        # Threads still inside work they would not stop (a model run, a write waiting for its
        # lock): tearing the interpreter down under them can crash native code (onnxruntime
        # aborts). Everything owed has been answered and SQLite needs no shutdown: leave now.
        logging.shutdown()
        os._exit(status)
    return status


def _dialect(args: argparse.Namespace) -> Any:
    """memproc's JSON-RPC (None: the service's default), or MCP with `--mcp`."""
    if not args.mcp:
        return None
    from memproc.server.mcp.dialect import McpDialect

    return McpDialect()


def _schema(args: argparse.Namespace) -> int:
    """`schemas/`, and the Python client's method constants generated from the same table."""
    from memproc.server import schema

    if args.check:
        differences = schema.diff_schemas(args.out) + schema.diff_client_methods()
        for line in differences:
            print(line, file=sys.stderr)
        return 1 if differences else 0
    schema.write_schemas(args.out)
    schema.write_client_methods()
    return 0


# -- memproc index -------------------------------------------------------------------------------


def _index(args: argparse.Namespace) -> int:
    from memproc import index_cli

    config = _config(args, {"db": args.db, "models_dir": args.models_dir})
    return 2 if config is None else index_cli.run(args.action, config)


def _query(args: argparse.Namespace) -> int:
    from memproc import query_cli

    config = _config(args, {"db": args.db, "models_dir": getattr(args, "models_dir", None)})
    return 2 if config is None else query_cli.run(args.command, config, args)


def _migrate_or_purge(args: argparse.Namespace) -> int:
    if args.command == "migrate":
        from memproc import migrate_cli

        config = _config(args, {})
        return 2 if config is None else migrate_cli.run(config, args)
    from memproc import purge_cli

    config = _config(args, {"db": args.db})
    return 2 if config is None else purge_cli.run(args.command, config, args)


def _ui(args: argparse.Namespace) -> int:
    from memproc.ui import server

    config = _config(args, {"db": args.db, "models_dir": args.models_dir})
    return 2 if config is None else server.run(config, args.port)


def _config(args: argparse.Namespace, flags: dict[str, Any]) -> Config | None:
    """The settings from `--config`, the environment and `flags`; None (said on stderr) when
    they are invalid, which the caller turns into exit status 2."""
    try:
        return load_config(config_file=args.config, flags=flags)
    except ConfigError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return None


def _data(args: argparse.Namespace) -> int:
    if args.command == "doctor":
        from memproc import doctor_cli

        return doctor_cli.run(args)
    from memproc import data_cli

    try:
        config = load_config(flags={"db": args.db})
    except ConfigError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return 2
    return data_cli.run(args.command, config, args)


# -- memproc models ------------------------------------------------------------------------------


def _models(args: argparse.Namespace) -> int:
    try:
        config = load_config(config_file=args.config, flags={"models_dir": args.models_dir})
    except ConfigError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return 2
    from memproc.models.manifest import ModelError

    action = {
        "list": _models_list,
        "pull": _models_pull,
        "install": _models_install,
        "verify": _models_verify,
    }[args.action]
    try:
        return action(args, config.models_dir)
    except ModelError as exc:
        print(f"memproc: {exc.reason}: {exc}", file=sys.stderr)
        return 2 if exc.reason == "unknown_model" else 1
    except OSError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return 1


def _progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _models_list(args: argparse.Namespace, models_dir: str) -> int:
    from memproc.models.catalog import CATALOG
    from memproc.models.manifest import ModelError, read_manifest
    from memproc.models.pull import installed

    _progress(f"models in {models_dir}")
    rows = [["NAME", "KIND", "DIMS", "POOLING", "LICENCE", "SOURCE"]]
    names = installed(models_dir)
    for name in names:
        try:
            manifest = read_manifest(os.path.join(models_dir, name))
        except ModelError as exc:
            rows.append([name, "invalid", "-", "-", "-", f"{exc.reason}: {exc}"])
            continue
        dims = "-" if manifest.dims is None else str(manifest.dims)
        pooling = manifest.pooling if manifest.kind == "embedder" else "-"
        rows.append([name, manifest.kind, dims, pooling, manifest.licence, manifest.source])
    if names:
        print(_table(rows))
    else:
        _progress("no models installed")
    missing = sorted(set(CATALOG) - set(names))
    if missing:
        print(f"not installed (memproc models pull NAME): {', '.join(missing)}")
    return 0


def _table(rows: list[list[str]]) -> str:
    """Columns padded to their widest cell; the last column is left ragged."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        padded = [cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True)]
        lines.append("  ".join([*padded, row[-1]]))
    return "\n".join(lines)


def _models_pull(args: argparse.Namespace, models_dir: str) -> int:
    from memproc.models.catalog import HF_ENDPOINT  # not at start-up: `serve` never needs it
    from memproc.models.pull import pull

    endpoint = args.endpoint or HF_ENDPOINT
    steps = _StepProgress(f"pull {args.name}")
    target = pull(args.name, models_dir, endpoint=endpoint, progress=steps.say, steps=steps)
    steps.finish()
    print(target)
    return 0


def _models_install(args: argparse.Namespace, models_dir: str) -> int:
    from memproc.models.pull import install

    steps = _StepProgress(f"install {os.path.basename(os.path.normpath(args.directory))}")
    target = install(args.directory, models_dir, progress=steps.say, steps=steps)
    steps.finish()
    _progress(f"installed {os.path.basename(target)} in {models_dir}")
    print(target)
    return 0


class _StepProgress:
    """A pull's or install's steps on stderr (memproc.progress: a bar on a terminal, lines
    otherwise). Its messages are lines off a terminal; on one they would break the bar."""

    def __init__(self, label: str) -> None:
        from memproc.progress import LateProgress

        self.late = LateProgress(label, unit="steps")
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        self.late.update(done, total)

    def say(self, message: str) -> None:
        if not self.tty or not self.late.started:
            _progress(message)

    def finish(self) -> None:
        self.late.finish()


def _models_verify(args: argparse.Namespace, models_dir: str) -> int:
    from memproc.models.pull import verify_all

    results = verify_all(models_dir)
    if not results:
        _progress(f"no models installed in {models_dir}")
    for name, failure in results.items():
        print(f"ok      {name}" if failure is None else f"FAILED  {name}: {failure}")
    return 1 if any(failure is not None for failure in results.values()) else 0
