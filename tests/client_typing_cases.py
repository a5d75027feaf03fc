"""Call sites as a harness writes them, for tests/test_client.py to run mypy --strict on.

Each line that must not type-check ends with `# E: <mypy error code>`; every other line must
type-check, and each `reveal_type` must show the type in its `# T:` comment. Never run.
"""

from __future__ import annotations

from typing import reveal_type

from memproc.client import AsyncClient, Client, methods
from memproc.wire.checkpoint_messages import CheckpointSaveParams
from memproc.wire.messages import ListParams, RememberParams


def blocking(client: Client) -> None:
    saved = client.remember(scope="s", kind="fact", content="x")
    reveal_type(saved)  # T: memproc.wire.messages.RememberResult
    page = client.call(methods.MEMORY_LIST, ListParams(scope="s", limit=5))
    reveal_type(page.items[0].content)  # T: str
    saved_cp = client.call(methods.CHECKPOINT_SAVE, CheckpointSaveParams(task="t", summary="s"))
    reveal_type(saved_cp.revision)  # T: int
    pending = client.submit(methods.MEMORY_GET, methods.MEMORY_GET.params(id="x"))
    reveal_type(pending.result())  # T: memproc.wire.messages.GetResult
    client.remember(kind="fact", contents="x")  # E: call-arg
    client.remember(kind="factoid", content="x")  # E: arg-type
    client.search(query=42)  # E: arg-type
    client.call(methods.MEMORY_LIST, RememberParams(kind="fact", content="x"))  # E: misc
    print(saved.nonexistent)  # E: attr-defined


async def asynchronous(client: AsyncClient) -> None:
    got = await client.get(id="x")
    reveal_type(got)  # T: memproc.wire.messages.GetResult
    pong = await client.call(methods.PING, methods.PING.params())
    reveal_type(pong)  # T: memproc.wire.messages.PingResult
    client.forget(id="x")  # E: unused-coroutine
