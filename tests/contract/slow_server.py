"""`memproc serve` with handlers that block on demand, for deterministic concurrency tests.

Control files live in the directory named by `CONTRACT_CONTROL_DIR`:

- `memory.search` with a query `block NAME` creates `started-NAME`, then waits (checking its
  cancellation token between short sleeps) until `release-NAME` or `release-all` exists, and
  then searches normally. Cancelling it yields -32800.
- `memory.remember` whose content starts with `block-insert NAME` inserts its row inside the
  write transaction, creates `started-NAME` and then keeps SQLite busy (so the store's progress
  handler sees a cancellation and interrupts) until released; a cancel rolls the row back.
- `block-insert-quiet NAME` does the same but waits without running SQL or checking the token,
  so a cancel is only noticed when the write is about to commit.
- With `CONTRACT_HOLD_MODELS` set, loading a model creates `started-models` and waits for
  `release-models`: requests meet the models still loading for as long as a test needs.

A blocked handler gives up after SAFETY_S so a broken test cannot hang the process forever.
"""

import os
import sys
import time

import memproc.cli
import memproc.store.memories as memory_sql
from memproc.server.methods import METHOD_TABLE

CONTROL = os.environ["CONTRACT_CONTROL_DIR"]
SAFETY_S = 30.0
BUSY_SQL = (
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) "
    "SELECT count(*) FROM c"
)


def _path(name: str) -> str:
    return os.path.join(CONTROL, name)


def _released(name: str) -> bool:
    return os.path.exists(_path(f"release-{name}")) or os.path.exists(_path("release-all"))


def _block(name: str, step) -> None:  # type: ignore[no-untyped-def]
    with open(_path(f"started-{name}"), "w"):
        pass
    deadline = time.monotonic() + SAFETY_S
    while not _released(name):
        if time.monotonic() > deadline:
            raise RuntimeError(f"slow_server: {name} was never released")
        step()


def _patch_search() -> None:
    method = METHOD_TABLE["memory.search"]
    original = method.handler

    def handler(ctx, params):  # type: ignore[no-untyped-def]
        words = params.query.split()
        if len(words) == 2 and words[0] == "block":

            def step() -> None:
                ctx.token.check()
                time.sleep(0.002)

            _block(words[1], step)
        return original(ctx, params)

    METHOD_TABLE["memory.search"] = method.with_handler(handler)


def _patch_insert() -> None:
    original = memory_sql.insert

    def insert(conn, new):  # type: ignore[no-untyped-def]
        memory_id = original(conn, new)
        words = new.content.split()
        if len(words) >= 2 and words[0] == "block-insert":
            _block(words[1], lambda: conn.execute(BUSY_SQL).fetchall())
        elif len(words) >= 2 and words[0] == "block-insert-quiet":
            _block(words[1], lambda: time.sleep(0.002))
        return memory_id

    memory_sql.insert = insert


def _patch_model_load() -> None:
    from memproc.models.manager import ModelManager

    original = ModelManager._load

    def load(self, slot):  # type: ignore[no-untyped-def]
        _block("models", lambda: time.sleep(0.002))
        return original(self, slot)

    ModelManager._load = load


if __name__ == "__main__":
    print(f"slow_server: control directory {CONTROL}", file=sys.stderr, flush=True)
    _patch_search()
    _patch_insert()
    if os.environ.get("CONTRACT_HOLD_MODELS"):
        _patch_model_load()
    sys.exit(memproc.cli.main(sys.argv[1:]))
