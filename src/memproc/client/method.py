"""A method as the client sees it: its wire name, its params and result types, whether it writes.

Why the params type is taken as a `Callable[PS, P]`: mypy then captures the Struct's keyword
signature in `PS`, so `client.remember(kind=..., content=...)` is checked field by field
against `RememberParams` without that signature being written out anywhere else. The constants
in `memproc.client.methods` are generated from the server's method table.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Generic, ParamSpec, TypeVar, cast

import msgspec

from memproc.errors import InvalidParams
from memproc.wire.messages import Params, Result

_AT_PATH = re.compile(r" - at `\$(?P<path>[^`]*)`$")  # as the server's dispatch reads it
PS = ParamSpec("PS")
P = TypeVar("P", bound=Params)
R = TypeVar("R", bound=Result)


class Method(Generic[PS, P, R]):
    """One method of the protocol, typed by its params (and their constructor) and result."""

    __slots__ = ("_decoder", "name", "params", "result", "writes")

    def __init__(
        self, name: str, params: Callable[PS, P], result: type[R], *, writes: bool = False
    ) -> None:
        self.name = name
        self.params = params
        self.result = result
        # Whether the method changes stored state (the table's flag; see README "Order within a
        # scope"). The client retries writes exactly as it retries reads: only after an error
        # response, which for a write means its transaction was rolled back.
        self.writes = writes
        self._decoder: msgspec.json.Decoder[R] | None = None

    def __repr__(self) -> str:
        return f"Method({self.name!r})"

    def build(self, params: P | Mapping[str, Any] | None) -> P:
        """The params Struct: as given, or converted from a mapping of wire names and checked
        as the server would check it (`InvalidParams` at the same `$.params` path)."""
        params_type = cast(type[P], self.params)
        if isinstance(params, params_type):
            return params
        try:
            return msgspec.convert({} if params is None else params, params_type)
        except msgspec.ValidationError as error:
            text = str(error)
            where = _AT_PATH.search(text)
            if where is None:
                raise InvalidParams(text) from None
            path = "$.params" + where.group("path")
            raise InvalidParams(text[: where.start()], path=path) from None

    def decode(self, raw: msgspec.Raw) -> R:
        """The result Struct, decoded from the response's raw `result`."""
        if self._decoder is None:
            self._decoder = msgspec.json.Decoder(self.result)
        return self._decoder.decode(raw)
