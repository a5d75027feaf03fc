"""`memproc.client.AsyncClient` against the real process: round trips and typed errors,
cancellation of the awaiting task reaching the server, time-outs, concurrent calls, and a
coroutine judge. Each test runs its own event loop (`asyncio.run`), with a hard deadline.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable
from typing import Any, TypeVar

import pytest
from pyclient_kit import DEADLINE_S, Servers

from memproc.client import AsyncClient, Timeout, methods
from memproc.errors import NotFound
from memproc.wire.messages import SearchParams
from memproc.wire.procedure_messages import (
    GateSettledParams,
    JudgeParams,
    JudgeVerdict,
    ProcedureStep,
)

SCOPE = "proj"
T = TypeVar("T")


def run(awaitable: Awaitable[T]) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(awaitable, 3 * DEADLINE_S)

    return asyncio.run(bounded())


async def wait_started(servers: Servers, name: str) -> None:
    """The wrapper's marker file, polled without blocking the loop."""
    deadline = time.monotonic() + DEADLINE_S
    while not servers.started(name):
        assert time.monotonic() < deadline, f"{name} never started"
        await asyncio.sleep(0.01)


def test_round_trip_and_typed_errors(servers: Servers) -> None:
    async def scenario(client: AsyncClient) -> None:
        async with client:
            saved = await client.remember(scope=SCOPE, kind="fact", content="async works")
            got = await client.get(scope=SCOPE, id=saved.id)
            assert got.memory.content == "async works"
            hits = await client.call(
                methods.MEMORY_SEARCH, SearchParams(scope=SCOPE, query="async", mode="lexical")
            )
            assert [hit.id for hit in hits.results] == [saved.id]
            assert [m.id for m in (await client.list(scope=SCOPE)).items] == [saved.id]
            with pytest.raises(NotFound) as missing:
                await client.get(scope=SCOPE, id="nope")
            assert missing.value.kind == "not_found"

    run(scenario(servers.async_client()))


def test_concurrent_calls_share_one_process(servers: Servers) -> None:
    async def scenario(client: AsyncClient) -> None:
        async with client:
            contents = [f"memory number {i}" for i in range(20)]
            saved = await asyncio.gather(
                *(client.remember(scope=SCOPE, kind="note", content=c) for c in contents)
            )
            assert len({s.id for s in saved}) == 20
            got = await asyncio.gather(*(client.get(scope=SCOPE, id=s.id) for s in saved))
            assert [g.memory.content for g in got] == contents

    run(scenario(servers.async_client()))


def test_cancelling_the_task_cancels_the_request_on_the_server(servers: Servers) -> None:
    """One worker, held by the blocked search until it is cancelled: the list after it is
    answered within its deadline only if the task's cancellation reached the server."""

    async def scenario(client: AsyncClient) -> None:
        async with client:
            await client.connect()
            task = asyncio.create_task(client.search(scope=SCOPE, query="block c"))
            await wait_started(servers, "c")
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            listed = await client.with_options(timeout=5.0).list(scope=SCOPE)
            assert listed.items == []

    run(scenario(servers.async_client("--workers", "1", slow=True)))


def test_a_timeout_raises_and_frees_the_worker(servers: Servers) -> None:
    async def scenario(client: AsyncClient) -> None:
        async with client:
            await client.connect(timeout=DEADLINE_S)  # start-up is not what is timed here
            with pytest.raises(Timeout) as timed_out:
                await client.search(scope=SCOPE, query="block t")
            assert timed_out.value.method == "memory.search"
            assert (await client.with_options(timeout=5.0).list(scope=SCOPE)).items == []

    run(scenario(servers.async_client("--workers", "1", slow=True, timeout=0.3)))


def test_a_coroutine_judge_answers_on_the_loop(servers: Servers) -> None:
    async def scenario() -> None:
        settled: asyncio.Queue[Any] = asyncio.Queue()
        loop = asyncio.get_running_loop()
        judged_on: list[asyncio.AbstractEventLoop] = []

        async def judge(params: JudgeParams) -> JudgeVerdict:
            judged_on.append(asyncio.get_running_loop())
            await asyncio.sleep(0)
            return JudgeVerdict(verdict="breaks", reason="C extensions lack 3.13 wheels")

        def hear(method: str, params: Any) -> None:
            settled.put_nowait((method, params))

        async with servers.async_client(judge=judge, on_notification=hear) as client:
            steps = [
                ProcedureStep(action="set FROM python:3.11-slim in docker/api.Dockerfile"),
                ProcedureStep(action="build docker/api.Dockerfile and push it"),
            ]
            producer = await client.procedure_create(
                scope=SCOPE, name="build the api base image", steps=steps
            )
            await client.procedure_create(
                scope=SCOPE,
                name="run the api test suite",
                steps=[
                    ProcedureStep(action="build docker/api.Dockerfile locally"),
                    ProcedureStep(action="run pytest in the image"),
                ],
            )
            newer = [ProcedureStep(action=steps[0].action.replace("3.11", "3.13")), steps[1]]
            evolved = await client.procedure_evolve(
                scope=SCOPE, id=producer.id, reason="newer python", steps=newer
            )
            method, params = await asyncio.wait_for(settled.get(), DEADLINE_S)
            assert method == "gate/settled" and isinstance(params, GateSettledParams)
            assert (params.revision_id, params.status) == (evolved.version_id, "quarantined")
            assert [f.pattern for f in params.findings] == ["judge_breaks"]
            assert judged_on == [loop]

    run(scenario())
