"""`memproc serve --mcp` driven by the official MCP Python SDK (`mcp`, a test-only dependency):
its stdio client spawns the real process, and its `ClientSession` checks every result against
the protocol's types for the negotiated revision and every tool's structured result against
the tool's own output schema. Every tool is listed and called successfully at least once, with
the smallest arguments that make sense for it.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcpkit import tool_methods

DEADLINE_S = 120.0
Call = Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
# The judge's outcome, heard as a log message: (event, status) once it has come.
Settled = Callable[[], Awaitable[tuple[str, str]]]


def serve(tmp_path: Path) -> StdioServerParameters:
    project = tmp_path / "project"
    project.mkdir()
    (tmp_path / "no-models").mkdir()
    flags = ["--db", str(tmp_path / "memory.db"), "--project", str(project)]
    flags += ["--models-dir", str(tmp_path / "no-models"), "--embedder", "none"]
    return StdioServerParameters(
        command=sys.executable, args=["-m", "memproc", "serve", "--mcp", *flags]
    )


async def judge(
    context: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    """A scripted model: every revision it is asked about is safe."""
    assert "3.13-slim" in str(params.messages[0].content)
    verdict = '{"verdict": "safe", "reason": "the suite runs on 3.13"}'
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(type="text", text=verdict), model="scripted"
    )


def test_the_sdk_lists_and_calls_every_tool(tmp_path: Path) -> None:
    called: list[str] = []
    logged: list[types.LoggingMessageNotificationParams] = []
    heard = anyio.Event()

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        logged.append(params)
        if params.logger == "memproc.gate":
            heard.set()

    async def settled() -> tuple[str, str]:
        await heard.wait()
        (data,) = [m.data for m in logged if m.logger == "memproc.gate"]
        return data["event"], data["status"]

    async def session_run() -> None:
        with anyio.fail_after(DEADLINE_S), (tmp_path / "stderr.log").open("w") as errlog:
            async with (
                stdio_client(serve(tmp_path), errlog=errlog) as (read, write),
                ClientSession(read, write, sampling_callback=judge, logging_callback=on_log) as s,
            ):
                initialized = await s.initialize()
                assert initialized.protocol_version == "2025-11-25"
                assert initialized.capabilities.tools is not None
                tools = {t.name: t for t in (await s.list_tools()).tools}
                assert set(tools) == {m.replace(".", "_") for m in tool_methods()}

                async def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                    result = await s.call_tool(name, arguments)  # checked against the schema
                    assert result.is_error is False, (name, result.content)
                    structured = result.structured_content
                    schema = tools[name].output_schema
                    assert structured is not None and schema is not None
                    assert set(structured) <= set(schema["properties"]), name  # nothing more
                    called.append(name)
                    return structured

                await every_tool(call, settled)
                await resources(s)
                await s.send_ping()

    anyio.run(session_run)
    assert set(called) == {m.replace(".", "_") for m in tool_methods()}


async def every_tool(call: Call, settled: Settled) -> None:
    await memories(call)
    await checkpoints(call)
    await evidence(call)
    await procedures(call)
    await judged_revision(call, settled)
    await call("context_get", {})


async def memories(call: Call) -> None:
    async def remember(content: str) -> str:
        return str((await call("memory_remember", {"kind": "fact", "content": content}))["id"])

    first = await remember("the api listens on port 8080")
    items = [{"kind": "note", "content": f"batch note {n}"} for n in range(3)]
    await call("memory_remember_batch", {"items": items})
    assert (await call("memory_search", {"query": "api port"}))["results"]
    await call("memory_get", {"id": first})
    await call("memory_list", {})
    await call("memory_feedback", {"id": first, "used": True})
    await call(
        "memory_edit", {"id": first, "content": "the api listens on 8081", "reason": "moved"}
    )
    await call("memory_history", {"id": first})
    await call("memory_challenge", {"id": first, "reason": "the port may have changed again"})
    await call("memory_resolve", {"id": first, "outcome": "upheld"})
    old = await remember("deploys run on fridays")
    await call("memory_supersede", {"id": old, "content": "deploys run on thursdays"})
    await call("memory_invalidate", {"id": await remember("tests need redis"), "reason": "no"})
    await call("memory_forget", {"id": await remember("a passing thought")})
    await call("memory_purge", {"id": await remember("token abc123"), "reason": "a secret"})


async def checkpoints(call: Call) -> None:
    await call("checkpoint_save", {"task": "release", "summary": "changelog written"})
    await call("checkpoint_get", {"task": "release"})
    await call("checkpoint_list", {})
    await call("checkpoint_clear", {"task": "release"})


async def evidence(call: Call) -> None:
    observed = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    record = {
        "evidence_id": "ci-run-1",
        "claim": "the test suite passes",
        "outcome": "supported",
        "observation": {"passed": 120, "failed": 0},
        "provenance": {"producer": "ci", "check_type": "pytest"},
        "observed_at": observed,
    }
    await call("evidence_put", record)
    await call("evidence_get", {"evidence_id": "ci-run-1"})
    await call("evidence_list", {})


def steps(*actions: str) -> list[dict[str, str]]:
    return [{"action": action} for action in actions]


async def procedures(call: Call) -> None:
    await call("entity_alias", {"name": "postgresql", "aliases": ["orders-db"]})
    export = {
        "name": "export orders",
        "steps": steps("unload the orders table"),
        "produces": [{"id": "orders", "format": "csv"}],
    }
    exporter = str((await call("procedure_create", export))["id"])
    load = {
        "name": "load orders",
        "steps": steps("COPY the orders files into the warehouse"),
        "consumes": [{"id": "orders", "from": "export orders", "format": "csv"}],
    }
    await call("procedure_create", load)
    await call("procedure_get", {"id": exporter})
    await call("procedure_list", {})
    await call("procedure_search", {"query": "orders export"})
    breaking = {"id": exporter, "reason": "smaller files"}
    breaking["produces"] = [{"id": "orders", "format": "parquet"}]
    quarantined = await call("procedure_evolve", breaking)
    assert quarantined["status"] == "quarantined"
    assert (await call("procedure_review_list", {}))["items"]
    decision = {"revision_id": quarantined["version_id"], "decision": "reject"}
    await call("procedure_review_decide", {**decision, "reason": "loads break", "actor": "me"})
    await call("episode_record", {"procedure_id": exporter, "outcome": "success"})
    await call("procedure_audit", {"procedure_id": exporter})


async def judged_revision(call: Call, settled: Settled) -> None:
    """An evolve the rules leave undecided: the SDK's sampling callback is the judge."""
    image = {
        "name": "build the api base image",
        "steps": steps("set FROM python:3.11-slim in docker/api.Dockerfile", "push it"),
    }
    producer = str((await call("procedure_create", image))["id"])
    suite = {"name": "run the api tests", "steps": steps("build docker/api.Dockerfile locally")}
    await call("procedure_create", suite)
    newer = steps("set FROM python:3.13-slim in docker/api.Dockerfile", "push it")
    evolved = await call("procedure_evolve", {"id": producer, "reason": "newer", "steps": newer})
    assert [u["outcome"] for u in evolved["undecided"]] == ["asked"]
    assert await settled() == ("gate/settled", "current")
    current = await call("procedure_get", {"id": producer})
    assert current["procedure"]["version_id"] == evolved["version_id"]


async def resources(s: ClientSession) -> None:
    listed = (await s.list_resources()).resources
    assert [str(r.uri) for r in listed][:2] == ["memproc://server/info", "memproc://context"]
    templates = (await s.list_resource_templates()).resource_templates
    assert len(templates) == 2
    context = await s.read_resource("memproc://context")
    assert '"sections"' in context.contents[0].text  # type: ignore[union-attr]
