"""`memproc purge` and `memproc vacuum`: erase a memory from the command line, and leave no old
copy of what purges erased in the store's files.

`purge` runs `memory.purge` (the same validation, errors and tombstone as over the protocol)
and prints its JSON result. With `--vacuum`, or later with `memproc vacuum` (after purges made
over the protocol), the store's `reclaim` runs: on PostgreSQL a VACUUM FULL of the tables a
purge touches, since the server keeps old row versions in its table pages until then; on
SQLite what a purge already did (secure_delete zeroes freed cells in the transaction, and the
WAL is checkpointed and truncated after it), done again in case a reader kept that checkpoint
from completing.

Exit status: 0 done, 1 the operation failed, 2 bad parameters or configuration.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

import msgspec

from memproc.config import Config
from memproc.errors import MemprocError
from memproc.progress import say
from memproc.store import is_server_url
from memproc.wire.messages import PurgeParams

if TYPE_CHECKING:
    from memproc.runtime import Runtime


def run(command: str, config: Config, args: argparse.Namespace) -> int:
    from memproc.runtime import Runtime

    params = None
    if command == "purge":
        try:
            raw = {"scope": args.scope, "id": args.id, "reason": args.reason}
            params = msgspec.convert(raw, PurgeParams)
        except msgspec.ValidationError as exc:
            say(f"memproc: invalid parameters: {exc}")
            return 2
    runtime = Runtime(config)
    try:
        if params is not None:
            _purge(runtime, params)
        if command == "vacuum" or args.vacuum:
            _reclaim(runtime, config)
    except MemprocError as exc:
        say(f"memproc: {exc.kind}: {exc.message}")
        return 2 if exc.kind in ("invalid_params", "not_found", "permission_denied") else 1
    finally:
        runtime.close()
    return 0


def _purge(runtime: Runtime, params: PurgeParams) -> None:
    from memproc.ops.context import OpContext
    from memproc.ops.memories import lifecycle

    result = lifecycle.purge(OpContext(runtime=runtime), params)
    sys.stdout.write(msgspec.json.encode(result).decode() + "\n")
    sys.stdout.flush()


def _reclaim(runtime: Runtime, config: Config) -> None:
    tables = runtime.store().reclaim()
    if is_server_url(config.db):
        say(f"vacuumed (VACUUM FULL) {len(tables)} tables: {', '.join(tables)}")
    else:
        say(
            "SQLite: freed space is zeroed as a purge commits (secure_delete) and the WAL is "
            "checkpointed and truncated: done"
        )
