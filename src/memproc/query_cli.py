"""`memproc search` and `memproc list`: read a store from the command line.

For people who would rather look than write JSON-RPC by hand: the same operations the service
runs (`memory.search`, `memory.list`, with their validation and their errors), on a database
file, printed as the method's JSON result (`--format json`, the default: what a script reads)
or as a table sized to the terminal (`--format table`). Reads only: a search never reinforces.

Exit codes as elsewhere: 0 answered (an empty answer too), 1 the operation failed (storage,
a model), 2 bad parameters or configuration.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from typing import Any

import msgspec

from memproc.config import Config
from memproc.errors import MemprocError
from memproc.wire.messages import ListParams, Memory, SearchHit, SearchParams

# The columns besides the content, and how wide each is at most.
_ID_WIDTH = 36
_KIND_WIDTH = 10
_DATE_WIDTH = 10  # YYYY-MM-DD
_MIN_CONTENT_WIDTH = 20


def run(command: str, config: Config, args: argparse.Namespace) -> int:
    from memproc.ops.context import OpContext
    from memproc.runtime import Runtime

    try:
        params = _params(command, args)
    except msgspec.ValidationError as exc:
        print(f"memproc: invalid parameters: {exc}", file=sys.stderr)
        return 2
    runtime = Runtime(config)
    rows: list[tuple[str, ...]]
    header: tuple[str, ...]
    try:
        ctx = OpContext(runtime=runtime)
        if command == "search":
            from memproc.ops import search as search_ops

            runtime.models.load_now()
            result: Any = search_ops.search(ctx, params)
            if result.degraded:
                print(f"memproc: {result.degraded}", file=sys.stderr)
            elif result.mode != "lexical" and (missing := _unembedded(runtime)):
                print(
                    f"memproc: {missing} memories have no vectors yet and are found by words "
                    "only: `memproc index rebuild` (or the next `memproc serve`) embeds them",
                    file=sys.stderr,
                )
            rows = [_search_row(rank, hit) for rank, hit in enumerate(result.results, 1)]
            header = ("#", "score", "kind", "date", "id", "content")
        else:
            from memproc.ops.memories import memory as memory_ops

            result = memory_ops.list_memories(ctx, params)
            rows = [_list_row(memory) for memory in result.items]
            header = ("kind", "status", "date", "id", "content")
    except MemprocError as exc:
        print(f"memproc: {exc.kind}: {exc.message}", file=sys.stderr)
        return 2 if exc.kind == "invalid_params" else 1
    finally:
        runtime.close()
    if args.format == "json":
        sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    else:
        sys.stdout.write(table(header, rows, shutil.get_terminal_size((120, 24)).columns))
    return 0


def _unembedded(runtime: Any) -> int:
    """Memories the search's embedder has no vectors for. This command starts no backfill (a
    read never writes), so a store written while no model was installed would otherwise
    answer by words alone without saying so."""
    from memproc.store import vectors as vector_sql

    index = runtime.vectors.vector_index(0.0, required=False)
    if index is None:
        return 0
    with runtime.store().reading() as conn:
        return vector_sql.count_pending(conn, index.find_row(conn))


def _params(command: str, args: argparse.Namespace) -> Any:
    """The method's params, validated by the same types the protocol decodes into."""
    if command == "search":
        raw = {"scope": args.scope, "query": args.query, "mode": args.mode, "limit": args.limit}
        return msgspec.convert(raw, SearchParams)
    raw = {"scope": args.scope, "limit": args.limit}
    if args.kinds:
        raw["kinds"] = args.kinds
    return msgspec.convert(raw, ListParams)


def _search_row(rank: int, hit: SearchHit) -> tuple[str, ...]:
    return (str(rank), f"{hit.score:.3f}", hit.kind, hit.created_at[:10], hit.id, hit.content)


def _list_row(memory: Memory) -> tuple[str, ...]:
    date = (memory.occurred_at or memory.created_at)[:10]
    return (memory.kind, memory.status, date, memory.id, memory.content)


def table(header: Sequence[str], rows: Sequence[Sequence[str]], width: int) -> str:
    """Left-aligned columns; the last (the content) takes what the terminal has left, cut
    with an ellipsis, and its line breaks shown as spaces."""
    fixed = [
        min(max([len(header[i]), *(len(r[i]) for r in rows)]), _cap(header[i]))
        for i in range(len(header) - 1)
    ]
    content_width = max(_MIN_CONTENT_WIDTH, width - sum(fixed) - 2 * len(fixed))
    lines = []
    for row in [tuple(header), *rows]:
        cells = [_fit(cell, fixed[i]).ljust(fixed[i]) for i, cell in enumerate(row[:-1])]
        cells.append(_fit(" ".join(row[-1].split()), content_width))
        lines.append("  ".join(cells).rstrip())
    if not rows:
        lines.append("(nothing found)")
    return "\n".join(lines) + "\n"


def _cap(column: str) -> int:
    return {"id": _ID_WIDTH, "kind": _KIND_WIDTH, "date": _DATE_WIDTH}.get(column, 12)


def _fit(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"
