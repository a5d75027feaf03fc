"""The JSON-RPC 2.0 envelope: request ids, responses, error objects and the request union.

The request union is built once, from the method table: each request type is tagged with its
wire name in the `method` field. Dispatch decodes in two stages instead (envelope, then params)
to give exact error codes; the union is the contract that `schemas/` publishes and that typed
clients can decode with.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

import msgspec

from memproc.protocol.methods import METHODS

# JSON-RPC allows any number; memproc takes integers that fit in 64 bits, or short strings.
RequestId = (
    Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
    | Annotated[str, msgspec.Meta(max_length=256)]
)


class ErrorObject(msgspec.Struct, kw_only=True):
    code: int
    message: str
    data: dict[str, Any]


class SuccessResponse(msgspec.Struct, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None
    result: Any


class ErrorResponse(msgspec.Struct, kw_only=True):
    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None
    error: ErrorObject


class Notification(msgspec.Struct, kw_only=True):
    """A message the server sends unprompted (progress, for example)."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: dict[str, Any]


class RequestBase(msgspec.Struct, tag_field="method", forbid_unknown_fields=True, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId | msgspec.UnsetType = msgspec.UNSET


def _request_type(name: str, params: type) -> type:
    struct_name = "".join(part.capitalize() for part in name.replace("/", ".").split(".") if part)
    return msgspec.defstruct(
        struct_name.replace("$", "") + "Request",
        [("params", params, msgspec.field(default_factory=params))],
        bases=(RequestBase,),
        tag=name,
        kw_only=True,
    )


REQUEST_TYPES: dict[str, type] = {
    method.name: _request_type(method.name, method.params) for method in METHODS
}
AnyRequest = Union[tuple(REQUEST_TYPES.values())]  # type: ignore[valid-type]  # noqa: UP007
