"""The request union of this server's methods, built once from the method table.

Building it imports every params type, so only schema generation and clients import this
module.
"""

from __future__ import annotations

from typing import Union

from memproc.protocol.methods import METHODS
from memproc.wire.requests import request_types

REQUEST_TYPES: dict[str, type] = request_types((method.name, method.params) for method in METHODS)
AnyRequest = Union[tuple(REQUEST_TYPES.values())]  # type: ignore[valid-type]  # noqa: UP007
