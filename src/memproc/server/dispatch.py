"""Bytes -> response bytes, in two decoding stages so every error code is exact.

Stage one reads the envelope (-32700 for bad JSON, -32600 for a bad envelope, -32601 for an
unknown method) and stage two the params (-32602 with a `$.params...` path). Nothing outside
`server/` decodes JSON-RPC.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import msgspec

from memproc.errors import InvalidParams, InvalidRequest, MemprocError, MethodNotFound, ParseError
from memproc.ops.context import OpContext
from memproc.server.errors import to_error_object
from memproc.server.methods import METHOD_TABLE, Method
from memproc.wire.envelope import ErrorResponse, Notification, RequestId, SuccessResponse

log = logging.getLogger("memproc.dispatch")

_ENVELOPE_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
_RESPONSE_MEMBERS = frozenset({"jsonrpc", "id", "result", "error"})
_MISSING = object()
_encoder = msgspec.json.Encoder()
_members_decoder = msgspec.json.Decoder(dict[str, msgspec.Raw])
_id_decoder = msgspec.json.Decoder(RequestId)
_AT_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")
# The deepest nesting of arrays and objects a line may have. Decoders stop at Python's
# recursion limit, which depends on the version (a 2,000-deep line fails to decode on 3.11
# and decodes on 3.13) and on how deep the decoding thread already is: an explicit limit
# below all of them gives every Python the same answer. No request needs a tenth of it.
MAX_JSON_DEPTH = 512
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


@dataclass(frozen=True)
class Incoming:
    """A request (or notification) whose envelope is valid and whose method exists."""

    method: Method
    id: Any  # int | str, or _MISSING for a notification
    raw_params: bytes

    @property
    def is_notification(self) -> bool:
        return self.id is _MISSING


@dataclass(frozen=True)
class ClientResponse:
    """The client's answer to a request the server sent it (`gate/judge`, for one)."""

    id: Any
    result: msgspec.Raw | None
    error: msgspec.Raw | None


class EnvelopeError(Exception):
    """Stage one failed; `response` is the encoded error line (None for a notification)."""

    def __init__(self, response: bytes | None) -> None:
        super().__init__("invalid envelope")
        self.response = response


def parse_envelope(
    line: bytes, table: Mapping[str, Method] = METHOD_TABLE
) -> Incoming | ClientResponse:
    """Stage one. Raises EnvelopeError carrying the response to send. `table`: the methods the
    stream serves (the Model Context Protocol has its own)."""
    members = _decode_members(line)
    if "method" not in members and ("result" in members or "error" in members):
        return _client_response(members)
    request_id = _decode_id(members)
    try:
        if _decode_text(members, "jsonrpc") != "2.0":
            raise InvalidRequest('jsonrpc must be "2.0"')
        unknown = sorted(set(members) - _ENVELOPE_MEMBERS)
        if unknown:
            raise InvalidRequest("unknown envelope members", members=unknown[:8])
        method_name = _decode_method(members)
        method = table.get(method_name)
        if method is None:
            raise MethodNotFound("method not found", method=method_name[:128])
    except MemprocError as exc:
        notification = request_id is _MISSING and not isinstance(exc, InvalidRequest)
        response = None if notification else error_line(_id_or_none(request_id), exc)
        raise EnvelopeError(response) from None
    params = members.get("params")
    return Incoming(
        method=method, id=request_id, raw_params=b"{}" if params is None else bytes(params)
    )


def _client_response(members: dict[str, msgspec.Raw]) -> ClientResponse:
    """A response from the client. JSON-RPC never answers a response, so one that is not
    well formed is dropped (and logged), never answered."""
    unknown = set(members) - _RESPONSE_MEMBERS
    try:
        request_id = _decode_id(members)
    except EnvelopeError:
        request_id = _MISSING
    if request_id is _MISSING or _decode_text(members, "jsonrpc") != "2.0" or unknown:
        log.warning("a malformed response from the client; dropped")
        raise EnvelopeError(None)
    if "result" in members and "error" in members:
        log.warning("a response with both result and error; dropped")
        raise EnvelopeError(None)
    return ClientResponse(request_id, members.get("result"), members.get("error"))


def _decode_members(line: bytes) -> dict[str, msgspec.Raw]:
    # msgspec checks UTF-8 only in the strings it decodes, not in the `Raw` values it skips.
    if not line.isascii():
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            raise EnvelopeError(error_line(None, ParseError("invalid UTF-8"))) from None
    if _nests_too_deeply(line):
        raise EnvelopeError(error_line(None, ParseError("JSON nests too deeply")))
    try:
        return _members_decoder.decode(line)
    except msgspec.ValidationError:
        # The decoder judged the first value by its first byte; only a line that is JSON at
        # all is an invalid request (`[[[` with no end is not JSON, so it is a parse error).
        _parse_error_unless_json(line)
        raise EnvelopeError(
            error_line(None, InvalidRequest("a request must be a JSON object"))
        ) from None
    except msgspec.DecodeError:
        raise EnvelopeError(error_line(None, ParseError("invalid JSON"))) from None
    except RecursionError:
        raise EnvelopeError(error_line(None, ParseError("JSON nests too deeply"))) from None


def _nests_too_deeply(line: bytes) -> bool:
    """Whether the line's arrays and objects nest deeper than MAX_JSON_DEPTH. Counting the
    brackets (in C) settles almost every line; only one with that many is scanned, outside
    its strings."""
    if line.count(b"[") + line.count(b"{") <= MAX_JSON_DEPTH:
        return False
    structure = _JSON_STRING.sub(b"", line).translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in structure:
        depth += 1 if byte in b"[{" else -1
        if depth > MAX_JSON_DEPTH:
            return True
    return False


def _parse_error_unless_json(line: bytes) -> None:
    """Raise the -32700 EnvelopeError if `line` is not one complete JSON value."""
    try:
        msgspec.json.decode(line)
    except msgspec.DecodeError:
        raise EnvelopeError(error_line(None, ParseError("invalid JSON"))) from None
    except RecursionError:
        raise EnvelopeError(error_line(None, ParseError("JSON nests too deeply"))) from None


def _decode_id(members: dict[str, msgspec.Raw]) -> Any:
    raw = members.get("id")
    if raw is None:
        return _MISSING
    try:
        return _id_decoder.decode(raw)
    except msgspec.ValidationError:
        message = "id must be a string or an integer"
        raise EnvelopeError(error_line(None, InvalidRequest(message))) from None


def _decode_method(members: dict[str, msgspec.Raw]) -> str:
    raw = members.get("method")
    if raw is None:
        raise InvalidRequest("method is required")
    try:
        return msgspec.json.decode(raw, type=str)
    except msgspec.ValidationError:
        raise InvalidRequest("method must be a string") from None


def _decode_text(members: dict[str, msgspec.Raw], name: str) -> str | None:
    """The member as a JSON string (None if absent or not a string): compared by value, so
    `"2\\u002e0"` is "2.0" as JSON says it is."""
    raw = members.get(name)
    if raw is None:
        return None
    try:
        return msgspec.json.decode(raw, type=str)
    except msgspec.ValidationError:
        return None


def _id_or_none(request_id: Any) -> Any:
    return None if request_id is _MISSING else request_id


def decode_params(incoming: Incoming) -> Any:
    """Stage two: params into the method's type. `null` or absent params mean `{}`."""
    raw = incoming.raw_params
    if raw.strip() == b"null":
        raw = b"{}"
    try:
        return msgspec.json.decode(raw, type=incoming.method.params)
    except msgspec.ValidationError as exc:
        raise _invalid_params(str(exc)) from None
    except RecursionError:
        raise InvalidParams("params nest too deeply") from None


def _invalid_params(text: str) -> InvalidParams:
    match = _AT_PATH.search(text)
    if match is None:
        message = "params must be an object" if "got `array`" in text else text
        return InvalidParams(message, path="$.params")
    return InvalidParams(text[: match.start()], path="$.params" + match.group("path"))


def execute(incoming: Incoming, ctx: OpContext) -> bytes | None:
    """Stage two and the handler call. Returns the response line, or None for a notification."""
    started = time.perf_counter()
    try:
        result = incoming.method.handler(ctx, decode_params(incoming))
    except Exception as exc:
        response: bytes | None = error_line(_id_or_none(incoming.id), exc)
        outcome = getattr(exc, "kind", "internal_error")
    else:
        response = None if incoming.is_notification else success_line(incoming.id, result)
        outcome = "ok"
    log.debug(
        "request",
        extra={
            "method": incoming.method.name,
            "outcome": outcome,
            "ms": round((time.perf_counter() - started) * 1000, 3),
        },
    )
    return None if incoming.is_notification else response


class ScopeHint(msgspec.Struct):
    """The scope members of any request's params, read ahead of the handler to order it."""

    scope: str | None = None
    scopes: list[str] | None = None


_scope_hint_decoder = msgspec.json.Decoder(ScopeHint)


def scope_hint(incoming: Incoming) -> ScopeHint | None:
    """The scopes a request names, unresolved; None when its params cannot be read this far
    (stage two will then refuse the request, and a refused request changes nothing)."""
    raw = incoming.raw_params
    if raw.strip() == b"null":
        return ScopeHint()
    try:
        return _scope_hint_decoder.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None


def success_line(request_id: Any, result: Any) -> bytes:
    return _encoder.encode(SuccessResponse(id=request_id, result=result)) + b"\n"


def notification_line(method: str, params: dict[str, Any]) -> bytes:
    return _encoder.encode(Notification(method=method, params=params)) + b"\n"


def error_line(request_id: Any, exc: BaseException) -> bytes:
    return _encoder.encode(ErrorResponse(id=request_id, error=to_error_object(exc))) + b"\n"


def missing_id() -> Any:
    """The sentinel a notification carries in `Incoming.id`."""
    return _MISSING
