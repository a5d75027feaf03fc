"""Rows into records, decoded by msgspec: one place that turns what SQLite hands back into
the store's typed records.

A record type is an `array_like` Struct whose fields are the columns in SELECT order, so a row
converts as it comes and msgspec checks every value against the field's type: a status or a
kind read from the database is one of the vocabulary's names (`memproc.wire.vocabulary`), or
the read fails loudly instead of handing an unknown state to the layers above. Columns that
hold JSON text are named once per type and decoded first.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Generic, TypeVar

import msgspec

T = TypeVar("T", bound=msgspec.Struct)

_json = msgspec.json.Decoder()


class RowDecoder(Generic[T]):
    """Decodes rows into `type_`, given which of its fields are stored as JSON text."""

    def __init__(self, type_: type[T], *, json: Iterable[str] = (), strict: bool = True) -> None:
        self.type = type_
        self.fields: tuple[str, ...] = tuple(f.name for f in msgspec.structs.fields(type_))
        self._json = tuple(self.fields.index(name) for name in json)
        self._strict = strict

    def columns(self, prefix: str = "") -> str:
        """The fields as a SELECT list, in order: the columns' names are the fields' names."""
        return ", ".join(f"{prefix}{name}" for name in self.fields)

    def __call__(self, row: Sequence[Any]) -> T:
        if self._json:
            values = list(row)
            for index in self._json:
                values[index] = _json.decode(values[index])
            row = values
        return msgspec.convert(row, self.type, strict=self._strict)
