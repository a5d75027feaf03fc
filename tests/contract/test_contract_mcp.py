"""`memproc serve --mcp` through a scripted client on the real process: the handshake and what
may come before it, the tool list and its schemas, tool calls and their errors, resources.

The stream check every contract test ends with (each stdout line one JSON-RPC message, every
error with `data.kind` and `data.retryable`) holds for the MCP stream too.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from client import Client, Spawn, assert_error
from mcpkit import (
    LATEST,
    SCHEMAS,
    call,
    error,
    initialize,
    ok,
    read,
    start,
    tool_methods,
    tool_result,
)

FLAGS = ("--embedder", "none", "--reranker", "none")
SCOPE = "proj"


@pytest.fixture
def server(spawn: Spawn) -> Client:
    return start(spawn, *FLAGS)


# -- the handshake -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2024-11-05"),
        ("2099-01-01", LATEST),  # unknown: the newest memproc speaks, and the client decides
    ],
)
def test_initialize_answers_the_clients_revision_or_the_newest(
    spawn: Spawn, asked: str, answered: str
) -> None:
    server = spawn("--mcp", *FLAGS)
    result = initialize(server, version=asked)
    assert result["protocolVersion"] == answered
    assert result["serverInfo"]["name"] == "memproc"
    assert set(result["capabilities"]) == {"tools", "resources", "logging"}
    assert "context_get" in result["instructions"]


def test_only_ping_is_served_before_the_session_is_initialized(spawn: Spawn) -> None:
    server = spawn("--mcp", *FLAGS)
    early = server.call("tools/list")
    assert assert_error(early, -32600)["state"] == "awaiting_initialize"
    assert server.call("ping")["result"] == {}
    server.notify("notifications/cancelled", {"requestId": 99})  # dropped, never answered
    initialize(server)
    between = server.call("tools/call", {"name": "memory_list", "arguments": {"scope": SCOPE}})
    assert assert_error(between, -32600)["state"] == "awaiting_initialized"
    assert assert_error(server.call("initialize", {"protocolVersion": LATEST}), -32600)
    assert server.call("ping")["result"] == {}
    server.notify("notifications/initialized")
    assert len(server.result("tools/list")["tools"]) == len(tool_methods())
    assert server.unsolicited() == []
    assert server.responses(99) == []


def test_memprocs_own_methods_are_not_mcp_methods(server: Client) -> None:
    assert_error(server.call("memory.remember", {"scope": SCOPE}), -32601)
    assert_error(server.call("server/discover", {}), -32601)  # a 2026 client then initializes
    assert_error(server.call("prompts/list"), -32601)


# -- tools ---------------------------------------------------------------------------------------


def inline(schema: dict[str, Any]) -> dict[str, Any]:
    """A `schemas/` file as a tool schema: its root definition at the root."""
    definitions = dict(schema["$defs"])
    root = definitions.pop(schema["$ref"].rpartition("/")[2])
    return {**root, "$defs": definitions} if definitions else root


def schema_file(method: str, part: str) -> dict[str, Any]:
    stem = method.replace("$/", "dollar.").replace("/", ".")
    return dict(json.loads((SCHEMAS / f"{stem}.{part}.json").read_text()))


def test_every_method_is_a_tool_with_the_schemas_of_schemas_dir(server: Client) -> None:
    tools = {tool["name"]: tool for tool in server.result("tools/list")["tools"]}
    methods = tool_methods()
    assert set(tools) == {method.replace(".", "_") for method in methods}
    for method in methods:
        tool = tools[method.replace(".", "_")]
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool["name"])
        assert tool["title"] and len(tool["description"]) > 40
        assert tool["inputSchema"] == inline(schema_file(method, "params"))
        assert tool["outputSchema"] == inline(schema_file(method, "result"))
        assert tool["inputSchema"]["type"] == tool["outputSchema"]["type"] == "object"
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["annotations"]["openWorldHint"] is False
    assert tools["memory_search"]["annotations"]["readOnlyHint"] is True
    assert tools["memory_purge"]["annotations"]["destructiveHint"] is True


def test_an_older_revision_gets_no_field_it_does_not_define(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, version="2025-03-26")
    tool = server.result("tools/list")["tools"][0]
    assert set(tool) == {"name", "description", "inputSchema", "annotations"}
    result = server.wait_for(call(server, "memory_get", {"scope": SCOPE, "id": "none"}))["result"]
    assert "structuredContent" not in result and result["isError"] is True
    assert json.loads(result["content"][0]["text"])["error"]["code"] == -32002


def test_remember_then_search_and_context_see_it(server: Client) -> None:
    note = {"scope": SCOPE, "kind": "decision", "content": "deploys go through the blue pool"}
    remembered = call(server, "memory_remember", note)
    searched = call(server, "memory_search", {"scope": SCOPE, "query": "blue pool deploys"})
    context = call(server, "context_get", {"scope": SCOPE})
    memory_id = tool_result(server, remembered)["structuredContent"]["id"]
    hits = tool_result(server, searched)["structuredContent"]["results"]
    assert [hit["id"] for hit in hits] == [memory_id]
    sections = tool_result(server, context)["structuredContent"]["sections"]
    decisions = next(s for s in sections if s["name"] == "decisions")
    assert [item["id"] for item in decisions["items"]] == [memory_id]
    assert ok(server, "memory_remember", note) == {"id": memory_id, "created": False}
    assert ok(server, "memory_get", {"scope": SCOPE, "id": memory_id})["memory"]["status"] == (
        "active"
    )


def export_and_load(server: Client) -> str:
    export = {
        "scope": SCOPE,
        "name": "export orders",
        "steps": [{"action": "unload the orders table", "detail": "to s3://acme/orders/{ds}/"}],
        "produces": [{"id": "orders", "format": "csv", "version": "2.1"}],
    }
    load = {
        "scope": SCOPE,
        "name": "load orders",
        "steps": [{"action": "COPY the orders files into the warehouse"}],
        "consumes": [{"id": "orders", "from": "export orders", "format": "csv"}],
    }
    producer: str = ok(server, "procedure_create", export)["id"]
    ok(server, "procedure_create", load)
    return producer


def test_procedures_are_created_and_evolved_through_the_gate(server: Client) -> None:
    producer = export_and_load(server)
    breaking = ok(
        server,
        "procedure_evolve",
        {
            "scope": SCOPE,
            "id": producer,
            "reason": "parquet is smaller",
            "produces": [{"id": "orders", "format": "parquet", "version": "2.1"}],
        },
    )
    assert breaking["status"] == "quarantined"
    assert [f["pattern"] for f in breaking["findings"]] == ["changed_format"]
    compatible = ok(
        server,
        "procedure_evolve",
        {
            "scope": SCOPE,
            "id": producer,
            "reason": "a new minor version",
            "produces": [{"id": "orders", "format": "csv", "version": "2.2"}],
        },
    )
    assert compatible["status"] == "promoted"
    current = ok(server, "procedure_get", {"scope": SCOPE, "id": producer})["procedure"]
    assert current["version_id"] == compatible["version_id"]
    queue = ok(server, "procedure_review_list", {"scope": SCOPE})["items"]
    assert [item["revision_id"] for item in queue] == [breaking["version_id"]]


# -- errors --------------------------------------------------------------------------------------


def test_every_memproc_error_is_a_tool_error_with_its_code_and_data(spawn: Spawn) -> None:
    server = start(spawn, *FLAGS, "--scope", SCOPE)
    missing = error(server, "memory_get", {"scope": SCOPE, "id": "no-such-memory"})
    assert (missing["code"], missing["data"]["kind"]) == (-32002, "not_found")
    assert missing["data"]["retryable"] is False
    absent = error(server, "memory_remember", {"scope": SCOPE, "kind": "note"})
    assert (absent["code"], absent["data"]["path"]) == (-32602, "$.params")
    assert "content" in absent["message"]
    invented = error(server, "memory_list", {"scope": SCOPE, "colour": "red"})
    assert invented["code"] == -32602 and "colour" in invented["message"]
    wrong = error(server, "memory_list", {"scope": SCOPE, "limit": 0})
    assert (wrong["code"], wrong["data"]["path"]) == (-32602, "$.params.limit")
    denied = error(server, "memory_list", {"scope": "elsewhere"})
    assert (denied["code"], denied["data"]["kind"]) == (-32004, "permission_denied")
    saved = {"scope": SCOPE, "task": "t", "summary": "started"}
    ok(server, "checkpoint_save", saved)
    conflict = error(server, "checkpoint_save", {**saved, "if_revision": 0})
    assert (conflict["code"], conflict["data"]["current_revision"]) == (-32003, 1)


def test_protocol_errors_stay_json_rpc_errors(server: Client) -> None:
    unknown = server.call("tools/call", {"name": "memory_teleport", "arguments": {}})
    assert assert_error(unknown, -32602, path="$.params.name")["tool"] == "memory_teleport"
    listed = server.call("tools/call", {"name": "memory_list", "arguments": [SCOPE]})
    assert_error(listed, -32602, path="$.params.arguments")
    assert_error(server.call("tools/call", {"arguments": {}}), -32602)
    assert_error(server.call("resources/read", {"uri": "memproc://nowhere"}), -32002)


# -- resources -----------------------------------------------------------------------------------


def test_resources_list_and_read_the_context_and_checkpoints(spawn: Spawn, tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    server = start(spawn, *FLAGS, "--project", str(project))
    ok(server, "checkpoint_save", {"task": "ship v2/api", "summary": "tests pass", "files": ["a"]})
    ok(server, "memory_remember", {"kind": "preference", "content": "tabs, not spaces"})
    listed = server.result("resources/list")["resources"]
    uris = [resource["uri"] for resource in listed]
    assert uris == [
        "memproc://server/info",
        "memproc://context",
        "memproc://checkpoints/ship%20v2%2Fapi",
    ]
    assert all(resource["mimeType"] == "application/json" for resource in listed)
    context = read(server, "memproc://context")
    assert context["scope"] == str(project.resolve())
    checkpoint = read(server, uris[2])["checkpoint"]
    assert (checkpoint["task"], checkpoint["summary"]) == ("ship v2/api", "tests pass")
    other = read(server, "memproc://context?scope=other&budget_chars=500")
    assert other["scope"] == "other" and other["sections"][0]["items"] == []
    assert read(server, "memproc://server/info")["name"] == "memproc"
    templates = server.result("resources/templates/list")["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == [
        "memproc://context{?scope,task,budget_chars}",
        "memproc://checkpoints/{task}{?scope,revision}",
    ]


def test_a_resource_read_is_ordered_after_the_writes_sent_before_it(server: Client) -> None:
    call(server, "checkpoint_save", {"scope": SCOPE, "task": "t", "summary": "first"})
    read_id = server.request("resources/read", {"uri": "memproc://checkpoints/t?scope=proj"})
    content = server.wait_for(read_id)["result"]["contents"][0]
    assert json.loads(content["text"])["checkpoint"]["summary"] == "first"


def test_bad_resource_uris_are_refused(server: Client) -> None:
    bad = server.call("resources/read", {"uri": "memproc://context?colour=red"})
    assert_error(bad, -32602, path="$.params.uri")
    missing = server.call("resources/read", {"uri": "memproc://checkpoints/none?scope=proj"})
    assert assert_error(missing, -32002)["kind"] == "not_found"
    assert_error(server.call("resources/read", {"uri": "file:///etc/passwd"}), -32002)
