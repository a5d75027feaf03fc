"""Checks the wire types cannot express: limits from the config, JSON shape, times."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import UTC
from typing import Any

import orjson

from memproc.clock import format_ms
from memproc.errors import InvalidParams
from memproc.retrieval.boosts import parse_time

# Deeper metadata than this is refused: nothing legitimate needs it, and it bounds recursion.
MAX_METADATA_DEPTH = 32


def check_content(content: str, limit: int, path: str = "$.params.content") -> None:
    if len(content) > limit:
        raise InvalidParams(f"content exceeds {limit} characters", path=path)
    if not content.strip():
        raise InvalidParams("content must not be blank", path=path)


def check_metadata(metadata: dict[str, Any], limit: int, path: str = "$.params.metadata") -> None:
    if depth(metadata) > MAX_METADATA_DEPTH:
        raise InvalidParams(f"metadata nests deeper than {MAX_METADATA_DEPTH} levels", path=path)
    if not all(plain_number(item) for item in walk_json(metadata)):
        # JSON has no infinity, yet a Python caller can pass one; it would be stored as null.
        raise InvalidParams(
            "metadata numbers must be finite and integers within 64 bits", path=path
        )
    if len(orjson.dumps(metadata)) > limit:
        raise InvalidParams(f"metadata exceeds {limit} bytes as JSON", path=path)


def normalize_time(value: str | None, path: str) -> str | None:
    """Any RFC 3339 form -> the one stored form (UTC, milliseconds, `Z`), so text order is
    time order in SQL."""
    if value is None:
        return None
    try:
        moment = parse_time(value)
    except ValueError:
        raise InvalidParams("not an RFC 3339 timestamp", path=path) from None
    epoch_ms = int(moment.astimezone(UTC).timestamp() * 1000)
    return format_ms(epoch_ms)


def check_window(valid_from: str | None, valid_until: str | None, path: str) -> None:
    """A window must not be empty: it ends after it starts (both in the stored form, whose
    text order is time order). `path` is the object holding the two fields."""
    if valid_from is not None and valid_until is not None and valid_until <= valid_from:
        raise InvalidParams("valid_until must be after valid_from", path=f"{path}.valid_until")


def walk_json(value: Any) -> Iterator[Any]:
    """Every value nested in a JSON value, without recursion."""
    stack = [value]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def plain_number(item: Any) -> bool:
    """False for a number JSON storage cannot hold: infinity or NaN, or an integer beyond 64
    bits (orjson refuses those, so without this check they would fail as internal errors)."""
    if isinstance(item, float):
        return math.isfinite(item)
    if isinstance(item, int) and not isinstance(item, bool):
        return -(2**63) <= item < 2**64
    return True


def depth(value: Any) -> int:
    """Nesting depth of a JSON value, computed without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        deepest = max(deepest, level)
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else ()
        )
        stack.extend((child, level + 1) for child in children)
    return deepest
