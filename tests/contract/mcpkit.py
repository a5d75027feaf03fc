"""A scripted MCP client over the contract tests' one client helper: `memproc serve --mcp` is
the same process on the same pipes, so `Client` (deadlines, stderr on failure, the stream
check at the end of each test) serves as it is; this adds the MCP handshake and tool calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from client import DEFAULT_TIMEOUT, Client, Spawn

LATEST = "2025-11-25"
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"
# The memproc methods that are the protocol's business, not tools.
NOT_TOOLS = {"initialize", "ping", "server.info", "$/cancelRequest", "notifications/cancelled"}


def start(
    spawn: Spawn,
    *flags: str,
    capabilities: dict[str, Any] | None = None,
    version: str = LATEST,
    **spawn_options: Any,
) -> Client:
    """A `serve --mcp` process through the handshake: initialize, then initialized."""
    server = spawn("--mcp", *flags, **spawn_options)
    initialize(server, capabilities=capabilities, version=version)
    server.notify("notifications/initialized", {})
    return server


def initialize(
    server: Client, *, capabilities: dict[str, Any] | None = None, version: str = LATEST
) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": capabilities or {},
        "clientInfo": {"name": "contract-tests", "version": "1"},
    }
    result: dict[str, Any] = server.result("initialize", params)
    return result


def call(
    server: Client, name: str, arguments: Any = None, *, meta: dict[str, Any] | None = None
) -> Any:
    """Send a tools/call without waiting; its id."""
    params: dict[str, Any] = {"name": name}
    if arguments is not None:
        params["arguments"] = arguments
    if meta is not None:
        params["_meta"] = meta
    return server.request("tools/call", params)


def tool_result(
    server: Client, request_id: Any, timeout: float = DEFAULT_TIMEOUT
) -> dict[str, Any]:
    """The CallToolResult of a call, checked: one text block holding the same JSON as
    `structuredContent` when there is structured content."""
    response = server.wait_for(request_id, timeout)
    assert "result" in response, response
    result: dict[str, Any] = response["result"]
    assert isinstance(result["isError"], bool), result
    (block,) = result["content"]
    assert block["type"] == "text", result
    if "structuredContent" in result:
        assert json.loads(block["text"]) == result["structuredContent"], result
    return result


def ok(
    server: Client,
    name: str,
    arguments: Any = None,
    *,
    meta: dict[str, Any] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Any:
    """Call a tool and return its structured result, failing on a tool error."""
    result = tool_result(server, call(server, name, arguments, meta=meta), timeout)
    assert result["isError"] is False, result
    return result["structuredContent"]


def error(server: Client, name: str, arguments: Any = None) -> dict[str, Any]:
    """Call a tool that must fail: its error object {code, message, data}."""
    result = tool_result(server, call(server, name, arguments))
    assert result["isError"] is True, result
    found: dict[str, Any] = result["structuredContent"]["error"]
    assert set(found) == {"code", "message", "data"}, found
    return found


def read(server: Client, uri: str) -> Any:
    """A resource's JSON content."""
    result = server.result("resources/read", {"uri": uri})
    (content,) = result["contents"]
    assert (content["uri"], content["mimeType"]) == (uri, "application/json"), content
    return json.loads(content["text"])


def tool_methods() -> set[str]:
    """Every method `schemas/` describes that should be a tool."""
    names = {path.name.removesuffix(".params.json") for path in SCHEMAS.glob("*.params.json")}
    methods = {name.replace("dollar.", "$/") for name in names if not name.startswith("to_client")}
    methods.discard("notifications.cancelled")
    return methods - NOT_TOOLS
