"""The request union: one request type per method, tagged with its wire name in `method`.

Dispatch decodes in two stages instead (envelope, then params) to give exact error codes; the
union is the contract that `schemas/` publishes and that typed clients can decode with. Building
it imports every params type, so only schema generation and clients import this module.
"""

from __future__ import annotations

from typing import Literal, Union

import msgspec

from memproc.protocol.envelope import RequestId
from memproc.protocol.methods import METHODS


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
