"""Types are the contract: schemas/, the method table and the request union agree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import msgspec
import pytest

from memproc.ops.context import OpContext
from memproc.server import dispatch
from memproc.server.methods import METHOD_TABLE, METHODS, method_catalog
from memproc.server.schema import (
    REQUEST_TYPES,
    AnyRequest,
    diff_schemas,
    generate_schemas,
    write_schemas,
)
from memproc.wire import messages as m
from memproc.wire.outbound import SERVER_MESSAGES

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def stem(name: str) -> str:
    return name.replace("$/", "dollar.").replace("/", ".")


def test_checked_in_schemas_equal_the_generated_ones() -> None:
    assert diff_schemas(str(SCHEMAS)) == [], "run `memproc schema --out schemas`"


def test_generation_is_deterministic() -> None:
    assert generate_schemas() == generate_schemas()


def test_diff_schemas_reports_missing_unexpected_and_different_files(tmp_path: Path) -> None:
    write_schemas(str(tmp_path))
    assert diff_schemas(str(tmp_path)) == []
    (tmp_path / "ping.params.json").unlink()
    (tmp_path / "stale.result.json").write_text("{}")
    (tmp_path / "memory.get.result.json").write_text("{}")
    assert diff_schemas(str(tmp_path)) == [
        "missing: ping.params.json",
        "unexpected: stale.result.json",
        "differs: memory.get.result.json",
    ]
    write_schemas(str(tmp_path))  # rewrites and removes stale files
    assert diff_schemas(str(tmp_path)) == []
    assert diff_schemas(str(tmp_path / "absent")) == [
        f"missing: {name}" for name in sorted(generate_schemas())
    ]


def test_table_union_tags_and_schema_files_agree() -> None:
    names = [method.name for method in METHODS]
    assert len(names) == len(set(names))
    assert set(METHOD_TABLE) == set(names)
    assert list(REQUEST_TYPES) == names
    union_members = get_args(AnyRequest)
    assert set(union_members) == set(REQUEST_TYPES.values())
    tags = {msgspec.inspect.type_info(t).tag for t in union_members}
    assert tags == set(names)
    for name, request_type in REQUEST_TYPES.items():
        info = msgspec.inspect.type_info(request_type)
        assert (info.tag_field, info.tag) == ("method", name)
        params_field = next(f for f in info.fields if f.name == "params")
        assert params_field.type.cls is METHOD_TABLE[name].params
    files = {path.name for path in SCHEMAS.glob("*.json")}
    expected = {f"{stem(n)}.{part}.json" for n in names for part in ("params", "result")}
    to_client = {f"to_client.{stem(m.name)}.params.json" for m in SERVER_MESSAGES}
    to_client |= {f"to_client.{stem(m.name)}.result.json" for m in SERVER_MESSAGES if m.result}
    assert files == expected | to_client | {"envelope.json"}
    assert set(generate_schemas()) == files


def test_schema_files_describe_their_types() -> None:
    for method in METHODS:
        document = json.loads((SCHEMAS / f"{stem(method.name)}.params.json").read_text())
        assert document["title"] == f"{method.name} params"
        assert document["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    envelope = json.loads((SCHEMAS / "envelope.json").read_text())
    request_union = envelope["oneOf"][0]
    assert {ref["$ref"].rsplit("/", 1)[-1] for ref in request_union["anyOf"]} == {
        t.__name__ for t in REQUEST_TYPES.values()
    }


def test_every_method_has_a_params_and_result_type_and_a_handler() -> None:
    for method in METHODS:
        assert issubclass(method.params, m.Params), method.name
        assert issubclass(method.result, m.Result), method.name
        assert callable(method.handler)


def _params_types() -> list[type]:
    return sorted({method.params for method in METHODS}, key=lambda t: t.__name__)


@pytest.mark.parametrize("params_type", _params_types(), ids=lambda t: t.__name__)
def test_every_params_struct_forbids_unknown_fields(params_type: type) -> None:
    assert params_type.__struct_config__.forbid_unknown_fields  # type: ignore[attr-defined]
    with pytest.raises(msgspec.ValidationError, match="unknown field `zzz_unknown`"):
        msgspec.json.decode(b'{"zzz_unknown": 1}', type=params_type)


def test_the_source_struct_forbids_unknown_fields_too() -> None:
    with pytest.raises(msgspec.ValidationError, match="unknown field `sesion`"):
        msgspec.convert({"sesion": "x"}, m.Source)


def test_result_fields_added_later_must_have_defaults() -> None:
    """Results are decoded by older clients: every field they might not know has a default.
    The fields a result was born with are listed here; anything new must be optional."""
    required_at_birth = {
        m.SearchResult: {"results", "mode"},
        m.SearchHit: {
            "id",
            "scope",
            "kind",
            "content",
            "score",
            "status",
            "created_at",
            "tags",
            "source",
        },
        m.ListResult: {"items"},
    }
    for result_type, born_with in required_at_birth.items():
        required = {f.name for f in msgspec.structs.fields(result_type) if f.required}
        assert required <= born_with, result_type.__name__


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":"a","method":"memory.search",'
        b'"params":{"scope":"s","query":"q","limit":3}}',
        b'{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":4}}',
        b'{"jsonrpc":"2.0","id":2,"method":"$/cancelRequest","params":{"id":"x"}}',
        b'{"jsonrpc":"2.0","id":3,"method":"memory.remember",'
        b'"params":{"kind":"fact","content":"c","source":{"tool":"t"}}}',
    ],
)
def test_a_typed_request_decodes_through_the_union(line: bytes) -> None:
    method = json.loads(line)["method"]
    decoded = msgspec.json.decode(line, type=AnyRequest)
    assert type(decoded) is REQUEST_TYPES[method]
    assert isinstance(decoded.params, METHOD_TABLE[method].params)
    assert msgspec.json.decode(msgspec.json.encode(decoded), type=AnyRequest) == decoded


def test_the_union_decodes_params_and_ids() -> None:
    line = b'{"jsonrpc":"2.0","id":"a","method":"memory.list","params":{"scope":"s","limit":3}}'
    decoded = msgspec.json.decode(line, type=AnyRequest)
    assert decoded.id == "a"
    assert decoded.params == m.ListParams(scope="s", limit=3)
    no_params = msgspec.json.decode(b'{"jsonrpc":"2.0","id":1,"method":"ping"}', type=AnyRequest)
    assert no_params.params == m.PingParams()
    notification = msgspec.json.decode(b'{"jsonrpc":"2.0","method":"ping"}', type=AnyRequest)
    assert notification.id is msgspec.UNSET


@pytest.mark.parametrize(
    "line",
    [
        b'{"jsonrpc":"2.0","id":1,"method":"nope"}',
        b'{"jsonrpc":"2.0","id":1,"method":"ping","extra":1}',
        b'{"jsonrpc":"1.0","id":1,"method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"memory.list","params":{"limit":0}}',
    ],
)
def test_the_union_rejects_what_dispatch_rejects(line: bytes, ctx: OpContext) -> None:
    with pytest.raises(msgspec.ValidationError):
        msgspec.json.decode(line, type=AnyRequest)
    try:
        incoming = dispatch.parse_envelope(line)
    except dispatch.EnvelopeError as exc:
        assert exc.response is not None
        return
    response = dispatch.execute(incoming, ctx)
    assert response is not None and b'"error"' in response


def test_server_info_catalog_lists_every_method_with_its_params_schema() -> None:
    catalog = method_catalog()
    assert [info.name for info in catalog] == [method.name for method in METHODS]
    for info, method in zip(catalog, METHODS, strict=True):
        assert info.params_schema == msgspec.json.schema(method.params)


def test_what_the_server_sends_unasked_is_typed_and_advertised(ctx: OpContext) -> None:
    """Every server-to-client request and notification has a type (and so a schema), and
    `initialize` lists them, so a client knows what it may be sent and what it owes."""
    from memproc.server.session_methods import initialize

    for message in SERVER_MESSAGES:
        assert isinstance(message.params_type, type)
        assert message.result is None or isinstance(message.result_type, type)
    params = msgspec.convert({"protocolVersion": "1.0"}, m.InitializeParams)
    capabilities = initialize(ctx, params).capabilities
    assert capabilities["requests"] == ["gate/judge"]
    assert capabilities["notifications"] == ["gate/settled", "notifications/progress"]
