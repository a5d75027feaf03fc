"""Dispatch: the two decoding stages, their exact codes, notifications, and -32603."""

from __future__ import annotations

import json
from typing import Any

import pytest

from memproc.errors import Conflict
from memproc.ops.context import OpContext
from memproc.server import dispatch
from memproc.server.methods import METHOD_TABLE, Method
from memproc.wire import messages as m


def respond(line: bytes, ctx: OpContext) -> dict[str, Any] | None:
    """What the service would write for `line`: the decoded response, or None."""
    try:
        incoming = dispatch.parse_envelope(line)
    except dispatch.EnvelopeError as exc:
        raw = exc.response
    else:
        raw = dispatch.execute(incoming, ctx)
    if raw is None:
        return None
    assert raw.endswith(b"\n") and raw.count(b"\n") == 1
    decoded: dict[str, Any] = json.loads(raw)
    return decoded


def request(method: str, params: Any = None, id_: Any = 1, **extra: Any) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, **extra}
    if id_ is not None:
        message["id"] = id_
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode()


def error_of(response: dict[str, Any] | None) -> tuple[Any, int, dict[str, Any]]:
    assert response is not None
    assert set(response) == {"jsonrpc", "id", "error"}
    assert response["jsonrpc"] == "2.0"
    error = response["error"]
    assert set(error) == {"code", "message", "data"}
    assert isinstance(error["message"], str) and error["message"]
    assert isinstance(error["data"]["retryable"], bool)
    return response["id"], error["code"], error["data"]


# -- stage one: the envelope ----------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        b"{",
        b"not json",
        b'{"jsonrpc":"2.0","id":1,"method":"ping",}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":NaN}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"a":Infinity}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping"} trailing',
        b'{"jsonrpc":"2.0","id":1,"method":"\xff"}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"\xc3\x28"}}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":' + b"[" * 50_000 + b"]" * 50_000 + b"}",
    ],
)
def test_parse_errors_are_32700_with_null_id(ctx: OpContext, line: bytes) -> None:
    assert error_of(respond(line, ctx))[:2] == (None, -32700)


@pytest.mark.parametrize(
    "line",
    [
        b"[1]",
        b"[]",
        b"1",
        b'"ping"',
        b"null",
        b'{"id":1,"method":"ping"}',
        b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
        b'{"jsonrpc":2.0,"id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1}',
        b'{"jsonrpc":"2.0","id":1,"method":5}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}',
    ],
)
def test_invalid_requests_are_32600(ctx: OpContext, line: bytes) -> None:
    request_id, code, data = error_of(respond(line, ctx))
    assert code == -32600
    assert data["kind"] == "invalid_request"
    assert request_id in (None, 1)


@pytest.mark.parametrize(
    "bad_id",
    [b"1.5", b"null", b"true", b"{}", b"[1]", b"9223372036854775808", b'"' + b"x" * 257 + b'"'],
)
def test_a_bad_id_is_32600_with_null_id(ctx: OpContext, bad_id: bytes) -> None:
    line = b'{"jsonrpc":"2.0","id":' + bad_id + b',"method":"ping"}'
    assert error_of(respond(line, ctx))[:2] == (None, -32600)


def test_an_invalid_envelope_echoes_a_valid_id(ctx: OpContext) -> None:
    response = respond(b'{"jsonrpc":"1.0","id":"abc","method":"ping"}', ctx)
    assert error_of(response)[:2] == ("abc", -32600)


def test_jsonrpc_is_compared_as_a_json_string_not_as_its_spelling(ctx: OpContext) -> None:
    """`"2\\u002e0"` is the string "2.0" written with an escape: the request is valid."""
    line = b'{"jsonrpc":"2\\u002e0","id":1,"method":"ping"}'
    assert respond(line, ctx) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert respond(b'{"jsonrpc":"2\\u002e0","method":"ping"}', ctx) is None
    spaced = respond(b'{"jsonrpc": "2.0" ,"id":2,"method":"ping"}', ctx)
    assert spaced == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_an_invalid_envelope_without_id_still_gets_a_response(ctx: OpContext) -> None:
    assert error_of(respond(b'{"jsonrpc":"1.0","method":"ping"}', ctx))[:2] == (None, -32600)


def test_unknown_method_is_32601_with_the_id(ctx: OpContext) -> None:
    request_id, code, data = error_of(respond(request("memory.nope", id_=7), ctx))
    assert (request_id, code, data["kind"]) == (7, -32601, "method_not_found")


def test_unknown_method_as_notification_gets_no_response(ctx: OpContext) -> None:
    assert respond(request("memory.nope", id_=None), ctx) is None


# -- stage two: the params ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params", "path"),
    [
        ("memory.list", {"scope": "s", "limit": 0}, "$.params.limit"),
        ("memory.list", {"scope": "s", "limit": "ten"}, "$.params.limit"),
        ("memory.list", {"scope": "s", "kinds": ["fact", "bogus"]}, "$.params.kinds[1]"),
        ("memory.search", {"scope": "s", "query": ""}, "$.params.query"),
        ("memory.remember", {"scope": "s", "kind": "note"}, "$.params"),
        (
            "memory.remember",
            {"kind": "note", "content": "x", "tags": ["a", ""]},
            "$.params.tags[1]",
        ),
        (
            "memory.remember",
            {"kind": "note", "content": "x", "source": {"x": 1}},
            "$.params.source",
        ),
        (
            "memory.remember",
            {"kind": "note", "content": "x", "importance": 2},
            "$.params.importance",
        ),
        ("memory.get", {"scope": "s", "id": "i", "bogus": 1}, "$.params"),
        ("memory.get", [1, 2], "$.params"),
        ("memory.get", "s", "$.params"),
        ("ping", {"unexpected": True}, "$.params"),
    ],
)
def test_invalid_params_are_32602_with_the_path(
    ctx: OpContext, method: str, params: Any, path: str
) -> None:
    request_id, code, data = error_of(respond(request(method, params, id_="r"), ctx))
    assert (request_id, code) == ("r", -32602)
    assert data["path"] == path
    assert data["kind"] == "invalid_params"


def test_the_path_message_has_no_path_suffix(ctx: OpContext) -> None:
    response = respond(request("memory.list", {"scope": "s", "limit": 0}), ctx)
    assert response is not None
    assert response["error"]["message"] == "Expected `int` >= 1"


@pytest.mark.parametrize("params", [None, {}])
def test_absent_or_null_params_mean_an_empty_object(ctx: OpContext, params: Any) -> None:
    line = request("ping") if params is None else request("ping", params)
    assert respond(line, ctx) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    line = b'{"jsonrpc":"2.0","id":2,"method":"ping","params":null}'
    assert respond(line, ctx) == {"jsonrpc": "2.0", "id": 2, "result": {}}


def test_invalid_params_in_a_notification_get_no_response(ctx: OpContext) -> None:
    assert respond(request("memory.list", {"limit": 0}, id_=None), ctx) is None


# -- execution -------------------------------------------------------------------------------


def test_a_request_runs_against_the_real_store(ctx: OpContext) -> None:
    params = {"scope": "s", "kind": "fact", "content": "dispatch works"}
    remembered = respond(request("memory.remember", params, id_="a"), ctx)
    assert remembered is not None
    assert remembered["id"] == "a"
    assert remembered["result"]["created"] is True
    got = respond(request("memory.get", {"scope": "s", "id": remembered["result"]["id"]}), ctx)
    assert got is not None
    assert got["result"]["memory"]["content"] == "dispatch works"


def test_a_notification_runs_but_gets_no_response(ctx: OpContext) -> None:
    params = {"scope": "s", "kind": "fact", "content": "from a notification"}
    assert respond(request("memory.remember", params, id_=None), ctx) is None
    listed = respond(request("memory.list", {"scope": "s"}), ctx)
    assert listed is not None
    assert [item["content"] for item in listed["result"]["items"]] == ["from a notification"]


def test_a_typed_error_from_a_handler_keeps_its_code(ctx: OpContext) -> None:
    request_id, code, data = error_of(
        respond(request("memory.get", {"scope": "s", "id": "x"}), ctx)
    )
    assert (request_id, code, data) == (
        1,
        -32002,
        {"kind": "not_found", "retryable": False, "id": "x"},
    )


def _install(monkeypatch: pytest.MonkeyPatch, handler: Any) -> None:
    monkeypatch.setitem(
        METHOD_TABLE, "test.boom", Method("test.boom", m.PingParams, m.PingResult, handler)
    )


def test_an_unexpected_exception_becomes_a_generic_32603(
    ctx: OpContext, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def boom(ctx: OpContext, params: m.PingParams) -> m.PingResult:
        raise ValueError("secret stored content; SELECT * FROM memories")

    _install(monkeypatch, boom)
    line = request("test.boom", id_=9)
    incoming = dispatch.parse_envelope(line)
    raw = dispatch.execute(incoming, ctx)
    assert raw is not None
    assert json.loads(raw) == {
        "jsonrpc": "2.0",
        "id": 9,
        "error": {
            "code": -32603,
            "message": "internal error",
            "data": {"kind": "internal_error", "retryable": False},
        },
    }
    for leak in (b"secret", b"SELECT", b"Traceback", b"ValueError", b"boom"):
        assert leak not in raw
    assert any("secret stored content" in r.getMessage() or r.exc_info for r in caplog.records)


def test_an_unexpected_exception_in_a_notification_gets_no_response(
    ctx: OpContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def boom(ctx: OpContext, params: m.PingParams) -> m.PingResult:
        raise RuntimeError("x")

    _install(monkeypatch, boom)
    assert respond(request("test.boom", id_=None), ctx) is None


def test_a_memproc_error_from_a_temporary_method_is_passed_through(
    ctx: OpContext, monkeypatch: pytest.MonkeyPatch
) -> None:
    def conflict(ctx: OpContext, params: m.PingParams) -> m.PingResult:
        raise Conflict("already there", id="abc")

    _install(monkeypatch, conflict)
    _, code, data = error_of(respond(request("test.boom", id_="c"), ctx))
    assert (code, data) == (-32003, {"kind": "conflict", "retryable": False, "id": "abc"})


@pytest.mark.parametrize("request_id", [0, -1, 2**63 - 1, -(2**63), "", "x" * 256, "é"])
def test_the_id_is_echoed_exactly(ctx: OpContext, request_id: Any) -> None:
    response = respond(request("ping", id_=request_id), ctx)
    assert response == {"jsonrpc": "2.0", "id": request_id, "result": {}}


def test_missing_id_sentinel_marks_notifications() -> None:
    incoming = dispatch.parse_envelope(request("ping", id_=None))
    assert incoming.is_notification
    assert incoming.id is dispatch.missing_id()
    assert not dispatch.parse_envelope(request("ping", id_=0)).is_notification


def nested_metadata(depth: int) -> bytes:
    """A remember whose metadata holds arrays nested `depth` deep: the line's object, its
    params and the metadata object add three levels."""
    inner = "[" * depth + "]" * depth
    return (
        '{"jsonrpc":"2.0","id":7,"method":"memory.remember","params":{"scope":"s","kind":"note",'
        f'"content":"x","metadata":{{"m":{inner}}}}}}}'
    ).encode()


def test_nesting_past_the_lines_limit_is_32700_on_every_python(ctx: OpContext) -> None:
    """The limit is memproc's own, not the decoder's recursion limit (which moved between
    Python versions): one level more is a parse error, brackets inside strings do not count,
    and a line just within it reaches the params check (metadata allows 32 levels)."""
    limit = dispatch.MAX_JSON_DEPTH
    too_deep = respond(nested_metadata(limit - 2), ctx)
    assert too_deep is not None and too_deep["error"]["code"] == -32700
    assert too_deep["id"] is None
    within = respond(nested_metadata(limit - 3), ctx)
    assert within is not None and within["error"]["code"] == -32602 and within["id"] == 7
    assert within["error"]["data"]["path"] == "$.params.metadata"
    quoted = request("memory.remember", {"scope": "s", "kind": "note", "content": "[" * limit * 2})
    answered = respond(quoted, ctx)
    assert answered is not None and "result" in answered
