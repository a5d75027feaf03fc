"""The shape of a typed request: one struct per method, tagged with its wire name in `method`.

Dispatch decodes in two stages instead (envelope, then params) to give exact error codes; the
union of these structs is the contract that `schemas/` publishes and that typed clients can
decode with. The union itself is built where the method table is (`memproc.server.schema`):
this module only says what each member looks like.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

import msgspec

from memproc.wire.envelope import RequestId


class RequestBase(msgspec.Struct, tag_field="method", forbid_unknown_fields=True, kw_only=True):
    jsonrpc: Literal["2.0"]
    id: RequestId | msgspec.UnsetType = msgspec.UNSET


def request_type(name: str, params: type) -> type:
    """The request struct of method `name`, whose params have type `params`."""
    struct_name = "".join(part.capitalize() for part in name.replace("/", ".").split(".") if part)
    return msgspec.defstruct(
        struct_name.replace("$", "") + "Request",
        [("params", params, msgspec.field(default_factory=params))],
        bases=(RequestBase,),
        tag=name,
        kw_only=True,
    )


def request_types(methods: Iterable[tuple[str, type]]) -> dict[str, type]:
    """Wire name -> request struct, for (name, params type) pairs in the table's order."""
    return {name: request_type(name, params) for name, params in methods}
