"""The JSON-RPC 2.0 envelope: request ids, responses, notifications and error objects.

The typed request union lives in `requests.py`: it imports every params type, which the
service must not pay for before its first response.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

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
