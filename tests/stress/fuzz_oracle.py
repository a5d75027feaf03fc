"""What the server must answer to one line: no response, or exactly one carrying a given id.

Written from the JSON-RPC 2.0 rules and the README, not from the server's code: a blank line
gets nothing; a line over `max_line_bytes`, or one that is not JSON (invalid UTF-8, bad syntax,
NaN, a lone surrogate, nesting past the decoder's limit) or whose `id` is not a valid id, gets one
error with `id: null`; a request with a valid id gets one response with that id; a line without
`id` is a notification (no answer) unless its envelope is invalid, which is answered with
`id: null`; a line with `result` or `error` and no `method` is a response, which JSON-RPC
never answers. memproc's ids are integers that fit in 64 bits and strings up to 256 characters.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memproc.server.dispatch import MAX_JSON_DEPTH

ENVELOPE_MEMBERS = frozenset({"jsonrpc", "id", "method", "params"})
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|.)")


@dataclass(frozen=True)
class Expected:
    answered: bool
    id: Any = None  # the id the one response must carry (None: `null`)
    why: str = ""


class _Rejected(ValueError):
    """The text is not JSON the server accepts."""


def expect(line: bytes, max_line_bytes: int) -> Expected:
    """The answer `line` (sent with its newline) must get."""
    if line.endswith(b"\r"):
        line = line[:-1]  # the framing takes `\r\n` as a line end
    if len(line) > max_line_bytes:
        return Expected(True, None, "over max_line_bytes")
    if not line.strip():
        return Expected(False, why="blank")
    try:
        value = _parse(line)
    except _Rejected as exc:
        return Expected(True, None, str(exc))
    if not isinstance(value, dict):
        return Expected(True, None, "not an object")
    if "method" not in value and ("result" in value or "error" in value):
        return Expected(False, why="a response (to a call the server never made): never answered")
    if "id" in value:
        request_id = value["id"]
        return Expected(True, request_id if _valid_id(request_id) else None, "request")
    return _notification(value)


def _notification(message: dict[str, Any]) -> Expected:
    """A line without an id is answered only if its envelope is invalid."""
    if message.get("jsonrpc") != "2.0" or set(message) - ENVELOPE_MEMBERS:
        return Expected(True, None, "invalid envelope without id")
    if not isinstance(message.get("method"), str):
        return Expected(True, None, "invalid method without id")
    return Expected(False, why="notification")


def _valid_id(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -(2**63) <= value <= 2**63 - 1
    return isinstance(value, str) and len(value) <= 256


def _parse(line: bytes) -> Any:
    if nesting_depth(line) > MAX_JSON_DEPTH:
        raise _Rejected("nests too deeply")
    try:
        text = line.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant, parse_int=_int)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _Rejected(type(exc).__name__) from None
    if has_lone_surrogate(text):
        raise _Rejected("lone surrogate")
    return value


def _reject_constant(name: str) -> Any:
    raise _Rejected(f"{name} is not JSON")


def _int(digits: str) -> Any:
    """Python refuses to read ints past 4,300 digits; such an id is invalid anyway."""
    return int(digits) if len(digits) < 4_000 else float("inf")


def nesting_depth(line: bytes) -> int:
    """The deepest bracket nesting outside strings (an upper bound for invalid text)."""
    if line.count(b"[") + line.count(b"{") <= MAX_JSON_DEPTH:
        return 0
    depth = deepest = 0
    for byte in _STRING.sub(b'""', line):
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def has_lone_surrogate(text: str) -> bool:
    """Does JSON text escape half a surrogate pair (`\\ud800` alone)? Scanned in the text, not
    the parsed value: the decoder also rejects one in a member that a repeated key discards."""
    expect_low_at = None
    for match in _ESCAPE.finditer(text):
        unit = int(match[1], 16) if match[1] else None
        if expect_low_at is not None:
            if match.start() != expect_low_at or unit is None or not 0xDC00 <= unit <= 0xDFFF:
                return True
            expect_low_at = None
        elif unit is not None and 0xD800 <= unit <= 0xDBFF:
            expect_low_at = match.end()
        elif unit is not None and 0xDC00 <= unit <= 0xDFFF:
            return True
    return expect_low_at is not None
