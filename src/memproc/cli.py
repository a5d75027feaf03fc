"""Command line: `memproc serve` runs the JSONL service; `memproc schema` writes `schemas/`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from memproc import __version__
from memproc.config import ConfigError, load_config


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="memproc", description=__doc__)
    parser.add_argument("--version", action="version", version=f"memproc {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve JSON-RPC over stdin/stdout")
    serve.add_argument("--config", help="TOML settings file")
    serve.add_argument("--db", help="SQLite database file (default ./memory.db)")
    serve.add_argument(
        "--project", help="project directory: its canonical path is the default scope"
    )
    serve.add_argument(
        "--scope", action="append", dest="scopes", help="allow only this scope (repeatable)"
    )
    serve.add_argument("--workers", type=int, help="worker threads")
    serve.add_argument("--max-pending", type=int, help="queued requests before -32011")
    serve.add_argument("--max-line-bytes", type=int, help="longest accepted request line")
    serve.add_argument("--log-level", help="debug, info, warning or error")

    schema = commands.add_parser("schema", help="write JSON Schema files for the protocol")
    schema.add_argument("--out", default="schemas", help="output directory (default ./schemas)")
    schema.add_argument(
        "--check", action="store_true", help="exit 1 if the directory differs from the code"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "schema":
        return _schema(args)
    return _serve(args)


def _serve(args: argparse.Namespace) -> int:
    # Claim stdout for the protocol before anything else can print to it: replies go to a
    # private duplicate of fd 1, and fd 1 itself now points at stderr.
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    flags = {
        "db": args.db,
        "project": args.project,
        "scopes": args.scopes,
        "workers": args.workers,
        "max_pending": args.max_pending,
        "max_line_bytes": args.max_line_bytes,
        "log_level": args.log_level,
    }
    try:
        config = load_config(config_file=args.config, flags=flags)
    except ConfigError as exc:
        print(f"memproc: {exc}", file=sys.stderr)
        return 2
    from memproc.logs import configure_logging
    from memproc.runtime import Runtime
    from memproc.service import Service

    configure_logging(config.log_level)
    runtime = Runtime(config)
    runtime.open_store()
    runtime.models.start()
    return Service(runtime, in_fd=0, out_fd=protocol_fd).run()


def _schema(args: argparse.Namespace) -> int:
    from memproc.protocol.schema import diff_schemas, write_schemas

    if args.check:
        differences = diff_schemas(args.out)
        for line in differences:
            print(line, file=sys.stderr)
        return 1 if differences else 0
    write_schemas(args.out)
    return 0
