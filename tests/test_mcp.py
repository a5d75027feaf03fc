"""The pieces of `memproc.server.mcp` in process: the tool catalog against the method table, schema
inlining, resource URIs, reading a verdict out of a model's reply, the session's capabilities
and log level, and where the package sits among the layers."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest

from memproc.errors import InvalidParams, NotFound
from memproc.ops.context import OpContext
from memproc.runtime import Runtime
from memproc.server import dispatch
from memproc.server.mcp import resources, tools
from memproc.server.mcp.dialect import McpDialect, tool_error
from memproc.server.mcp.messages import LATEST, PROTOCOL_VERSIONS, at_least
from memproc.server.mcp.sampling import McpSession, find_verdict, verdict_reply
from memproc.server.methods import METHOD_TABLE
from memproc.wire.outbound import JUDGE, PROGRESS, SETTLED, ClientReply
from test_layers import imports_of, in_layer, modules

CONNECTION = {"initialize", "ping", "server.info", "$/cancelRequest", "notifications/cancelled"}


# -- tools -----------------------------------------------------------------------------------


def test_every_method_but_the_connections_is_a_tool_once() -> None:
    assert sorted(spec.method for spec in tools.SPECS) == sorted(set(METHOD_TABLE) - CONNECTION)
    assert len(tools.TOOLS) == len(tools.SPECS)


def test_object_schema_puts_the_root_definition_at_the_root() -> None:
    schema = {"$ref": "#/$defs/A", "$defs": {"A": {"type": "object"}, "B": {"type": "string"}}}
    assert tools.object_schema(schema) == {"type": "object", "$defs": {"B": {"type": "string"}}}
    recursive = {
        "$ref": "#/$defs/Node",
        "$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
    }
    assert tools.object_schema(recursive)["$defs"] == recursive["$defs"]


def test_the_listing_follows_the_negotiated_revision() -> None:
    newest = tools.listing(LATEST)[0]
    assert newest.title and newest.output_schema and newest.annotations
    oldest = tools.listing("2024-11-05")[0]
    assert (oldest.title, oldest.output_schema, oldest.annotations) == (None, None, None)
    assert at_least("2025-11-25", "2025-06-18") and not at_least("2025-03-26", "2025-06-18")
    assert PROTOCOL_VERSIONS[0] == LATEST


def test_an_unexpected_failure_is_a_tool_error_without_its_text() -> None:
    result = msgspec.to_builtins(tool_error(RuntimeError("SELECT secret FROM t"), LATEST))
    assert result["isError"] is True
    assert result["structuredContent"]["error"]["code"] == -32603
    assert "secret" not in json.dumps(result)


# -- resources -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("uri", "method", "params"),
    [
        ("memproc://context", "context.get", {}),
        (
            "memproc://context?scope=%2Fsrv%2Fapp&budget_chars=500",
            "context.get",
            {"scope": "/srv/app", "budget_chars": 500},
        ),
        ("memproc://checkpoints/ship%2Fv2", "checkpoint.get", {"task": "ship/v2"}),
        (
            "memproc://checkpoints/t?revision=3&scope=p",
            "checkpoint.get",
            {"task": "t", "revision": 3, "scope": "p"},
        ),
        ("memproc://server/info", "server.info", {}),
    ],
)
def test_a_uri_names_a_method_and_its_params(uri: str, method: str, params: dict[str, Any]) -> None:
    target = resources.target(uri)
    assert (target.method, target.params) == (method, params)


@pytest.mark.parametrize(
    "uri", ["memproc://nothing", "http://context", "memproc://checkpoints/", "memproc://context#x"]
)
def test_a_uri_that_names_nothing_is_not_found(uri: str) -> None:
    with pytest.raises(NotFound):
        resources.target(uri)


@pytest.mark.parametrize(
    "uri",
    ["memproc://context?colour=red", "memproc://context?scope=a&scope=b", "memproc://context?="],
)
def test_a_query_memproc_does_not_take_is_invalid(uri: str) -> None:
    with pytest.raises(InvalidParams):
        resources.target(uri)


# -- the judge's verdict in a model's reply ----------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        '{"verdict": "breaks", "reason": "no wheels"}',
        'Verdict below.\n```json\n{"verdict": "breaks", "reason": "no wheels"}\n```',
        'Not {this}, nor {"verdict": "maybe"}, but {"verdict": "breaks", "reason": "no wheels"}',
        '{"answer": {"verdict": "breaks", "reason": "no wheels"}}',
    ],
)
def test_a_verdict_is_found_in_prose_fences_and_nesting(text: str) -> None:
    verdict = find_verdict(text)
    assert verdict is not None and (verdict.verdict, verdict.reason) == ("breaks", "no wheels")


@pytest.mark.parametrize(
    "text", ["", "safe", '{"verdict": "fine"}', '{"reason": "x"}', "{" * 10_000, '["safe"]']
)
def test_anything_else_holds_no_verdict(text: str) -> None:
    assert find_verdict(text) is None


def sampled(content: Any) -> ClientReply:
    result = {"role": "assistant", "content": content, "model": "m"}
    return ClientReply("answered", result=msgspec.Raw(msgspec.json.encode(result)))


def test_a_sampling_reply_becomes_the_judges_reply() -> None:
    text = {"type": "text", "text": '{"verdict": "safe", "reason": "ok"}'}
    answered = verdict_reply(sampled([{"type": "image", "data": "..."}, text]))
    assert answered.outcome == "answered" and answered.result is not None
    assert json.loads(bytes(answered.result)) == {"verdict": "safe", "reason": "ok"}
    assert verdict_reply(sampled({"type": "image", "data": "..."})).outcome == "malformed"
    not_sampling = ClientReply("answered", result=msgspec.Raw(b'{"verdict": "safe"}'))
    assert verdict_reply(not_sampling).outcome == "malformed"
    refused = ClientReply("refused", reason="no")
    assert verdict_reply(refused) is refused


# -- the session -------------------------------------------------------------------------------


def session(sent: list[dict[str, Any]]) -> McpSession:
    return McpSession(send=lambda line: sent.append(json.loads(line)), schedule=lambda *a: None)


def test_only_a_client_that_declares_sampling_is_asked_to_judge() -> None:
    sent: list[dict[str, Any]] = []
    without, with_sampling = session(sent), session(sent)
    without.declare({"roots": {}})
    with_sampling.declare({"sampling": {}})
    assert not without.can(JUDGE) and with_sampling.can(JUDGE)
    judge = {"prompt": "Is it safe?"}
    assert not without.ask(JUDGE, judge, scope="s", timeout_s=5, then=lambda ctx, reply: None)
    assert with_sampling.ask(JUDGE, judge, scope="s", timeout_s=5, then=lambda ctx, reply: None)
    (request,) = sent
    assert request["method"] == "sampling/createMessage"
    assert request["params"]["messages"][0]["content"] == {"type": "text", "text": "Is it safe?"}
    with_sampling.client_gone()


def test_settled_is_a_log_message_at_notice_and_the_level_filters_it() -> None:
    sent: list[dict[str, Any]] = []
    chatty = session(sent)
    chatty.notify(SETTLED, {"revision_id": "r"})
    chatty.notify("memproc/anything-else", {})
    ((message),) = sent
    assert message["method"] == "notifications/message"
    assert message["params"]["level"] == "notice"
    assert message["params"]["data"] == {"event": SETTLED, "revision_id": "r"}
    sent.clear()
    quiet = session(sent)
    quiet.log_level = "warning"
    quiet.notify(SETTLED, {"revision_id": "r"})
    assert sent == []


def test_a_dialect_knows_the_lifecycle_methods() -> None:
    dialect = McpDialect()
    assert {"initialize", "ping", "tools/list", "tools/call", "resources/read"} <= set(
        dialect.table
    )
    assert all(not name.startswith("memory.") for name in dialect.table)


def test_backfill_progress_is_a_log_message_once_the_session_is_up(runtime: Runtime) -> None:
    sent: list[dict[str, Any]] = []
    dialect = McpDialect()
    mcp_session = dialect.session(
        lambda line: sent.append(json.loads(line)), lambda *a: None, lambda request_id: False
    )
    ctx = OpContext(runtime=runtime, session=mcp_session)
    progress = {"task": "backfill", "embedder": "m", "done": 1, "total": 2}
    assert dialect.notification(PROGRESS, progress) is None
    assert sent == []  # before the handshake, dropped
    initialize = {"protocolVersion": LATEST, "capabilities": {}}
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ):
        incoming = dialect.parse(json.dumps(message).encode())
        assert isinstance(incoming, dispatch.Incoming)
        dialect.execute(incoming, ctx)
    assert dialect.notification(PROGRESS, progress) is None
    log = {"level": "info", "logger": "memproc.backfill", "data": progress}
    assert sent == [{"jsonrpc": "2.0", "method": "notifications/message", "params": log}]


# -- layers ----------------------------------------------------------------------------------


def test_only_the_cli_imports_the_mcp_transport() -> None:
    importers = {
        name
        for name in modules()
        if not in_layer(name, "memproc.server.mcp")
        and any(in_layer(target, "memproc.server.mcp") for target in imports_of(name))
    }
    assert importers == {"memproc.cli"}


def test_the_mcp_transport_never_imports_the_sdk() -> None:
    for name in modules():
        if in_layer(name, "memproc.server.mcp"):
            sdk = [t for t in imports_of(name) if t.split(".")[0] in ("mcp", "mcp_types")]
            assert sdk == [], name
