"""Hostile JSON values for the protocol fuzzer, and a JSON writer that can say what `json` won't.

Why a writer of our own: the fuzzer must put on the wire things the standard encoder refuses or
normalises away: a number token such as `1e309` or `-0` (`json.dumps` writes `Infinity` and `0`),
an object whose keys repeat, a lone surrogate either as a `\\ud800` escape or as raw (invalid)
UTF-8 bytes. Every draw goes through `rng`, a `random.Random` seeded by the driver or a
`TapeRandom` over bytes hypothesis drew, so a run is reproducible from its seed.
"""

from __future__ import annotations

import json
import random
from typing import Any

Rng = random.Random


class TapeRandom(random.Random):
    """A Random whose draws come from `tape` (bytes hypothesis drew), then, once the tape runs
    out, from a generator seeded with it.

    Why: hypothesis insists that replaying an example makes the same draws, but how many draws a
    fuzz line takes depends on what the server answered earlier (whether a known id exists yet).
    Drawing the whole tape up front keeps hypothesis's side fixed whatever the server does,
    and keeps its bias for extremes (runs of zero bytes and 0xff) in the lines."""

    def __init__(self, tape: bytes) -> None:
        super().__init__(tape)
        self._tape = tape
        self._at = 0

    def _take(self, size: int) -> bytes | None:
        if self._at + size > len(self._tape):
            return None
        self._at += size
        return self._tape[self._at - size : self._at]

    def random(self) -> float:
        chunk = self._take(7)
        if chunk is None:
            return super().random()
        return (int.from_bytes(chunk, "big") >> 3) / (1 << 53)

    def getrandbits(self, k: int) -> int:
        chunk = self._take((k + 7) // 8)
        if chunk is None:
            return super().getrandbits(k)
        return int.from_bytes(chunk, "big") >> (len(chunk) * 8 - k)


class Token(str):
    """JSON text written verbatim: a number the encoder cannot produce, or deep nesting."""


class Pairs(list[tuple[str, Any]]):
    """A JSON object given as its (key, value) pairs, so a key may appear twice."""


def dumps(value: Any, *, ascii_only: bool = False) -> str:
    """JSON text for `value` (dict, Pairs, list, str, int, float, bool, None or Token).
    Iterative, so a deep value cannot overflow the fuzzer's own stack."""
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, Token):
            out.append(item)
        elif isinstance(item, dict | Pairs):
            pairs = list(item.items()) if isinstance(item, dict) else list(item)
            stack.append(Token("}"))
            for index in range(len(pairs) - 1, -1, -1):
                key, member = pairs[index]
                stack.append(member)
                prefix = "{" if index == 0 else ","
                stack.append(Token(prefix + json.dumps(key, ensure_ascii=ascii_only) + ":"))
            if not pairs:
                stack.append(Token("{"))
        elif isinstance(item, list):
            stack.append(Token("]"))
            for index in range(len(item) - 1, -1, -1):
                stack.append(item[index])
                stack.append(Token("[" if index == 0 else ","))
            if not item:
                stack.append(Token("["))
        else:
            out.append(json.dumps(item, ensure_ascii=ascii_only, allow_nan=False))
    return "".join(out)


def encode(value: Any, *, ascii_only: bool = False) -> bytes:
    """The wire bytes. A lone surrogate left unescaped becomes invalid UTF-8 on purpose."""
    return dumps(value, ascii_only=ascii_only).encode("utf-8", "surrogatepass")


# -- strings ---------------------------------------------------------------------------------

EDGE_STRINGS: tuple[str, ...] = (
    "",
    " ",
    "\t \r",
    "\x00",
    "a\x00b",
    "\x7f\x1b[31m",
    "\u2028\u2029",
    "\ufeffbom",
    "\u202eevil",
    "e\u0301\u0301\u0301",
    "\u200d\u200b\u2060",
    "😀",
    "👩\u200d👩\u200d👧",
    "\U0010ffff",
    "\uffff\ufffe",
    "\ufffd",
    "İı ß ﬃ Σσς",
    "𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "مرحبا עברית",
    "漢字かなカナ한국어",
    "\ud800",
    "\udfff",
    "x\udc00\ud800y",
    "a\ud83d",
    "%s%n{0}{{}}",
    "'; DROP TABLE memories; --",
    '" OR 1=1 --',
    "\\",
    '"',
    "AND OR NOT NEAR(a b) * ^col: -x +y",
    '"unterminated',
    "/etc/passwd",
    "../../../../etc/passwd",
    "/proc/self/environ",
    "file:/etc/shadow",
    "C:\\Windows\\win.ini",
    "~/.ssh/id_rsa",
    "${HOME} $(id) `id`",
    "null",
    "-0",
    "1e309",
    "memory:../x",
    "evidence:a/../b",
    "<script>alert(1)</script>",
)

# Code points worth drawing from, by block: controls, Latin, combining marks, bidi controls,
# surrogates (lone on purpose), private use, specials and the astral planes.
_RANGES = (
    (0x00, 0x1F),
    (0x20, 0x7E),
    (0x80, 0x2FF),
    (0x300, 0x36F),
    (0x200B, 0x202E),
    (0xD800, 0xDFFF),
    (0xE000, 0xE0FF),
    (0xFFF0, 0xFFFF),
    (0x1F300, 0x1F6FF),
    (0x10FF00, 0x10FFFF),
)


def random_text(rng: Rng, max_chars: int = 40, *, surrogates: bool = True) -> str:
    """Characters from every block above (lone surrogates only if asked: a string holding one
    cannot be sent as valid JSON); half the time printable ASCII only."""
    length = rng.randint(0, max_chars)
    if rng.random() < 0.5:
        return "".join(chr(rng.randint(0x20, 0x7E)) for _ in range(length))
    ranges = _RANGES if surrogates else tuple(r for r in _RANGES if r[0] != 0xD800)
    chars = []
    for _ in range(length):
        low, high = rng.choice(ranges)
        chars.append(chr(rng.randint(low, high)))
    return "".join(chars)


def sized_text(rng: Rng, size: int) -> str:
    """A string of exactly `size` characters, cheap to build at any size."""
    unit = rng.choice(("a", "é", "漢", "😀", "ab c", "\x00"))
    return (unit * (size // len(unit) + 1))[:size]


def hostile_string(rng: Rng, limits: tuple[int, ...] = ()) -> str:
    """An edge string, random text, or a string straddling one of `limits` (in characters)."""
    roll = rng.random()
    if roll < 0.4:
        return rng.choice(EDGE_STRINGS)
    if roll < 0.8 or not limits:
        return random_text(rng)
    return sized_text(rng, max(0, rng.choice(limits) + rng.choice((-1, 0, 1))))


def plain_word(rng: Rng) -> str:
    """Ordinary text, so valid requests also store and find ordinary content."""
    words = ("build", "cache", "deploy", "flaky", "test", "node", "schema", "retry", "token")
    return " ".join(rng.choice(words) for _ in range(rng.randint(1, 6)))


# -- numbers ---------------------------------------------------------------------------------

EDGE_NUMBERS: tuple[Any, ...] = (
    0,
    -1,
    1,
    2**31,
    2**53 + 1,
    2**62,
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    2**64,
    2**64 - 1,
    10**30,
    -(10**30),
    0.5,
    -0.0,
    1e308,
    5e-324,
    Token("-0"),
    Token("1e309"),
    Token("-1e309"),
    Token("1E400"),
    Token("1e-400"),
    Token("123456789012345678901234567890.5"),
    Token("0." + "0" * 400 + "1"),
    Token("9" * 5000),
)


def hostile_number(rng: Rng) -> Any:
    return rng.choice(EDGE_NUMBERS) if rng.random() < 0.8 else rng.randint(-(2**70), 2**70)


# -- structure -------------------------------------------------------------------------------


def json_value(rng: Rng, depth: int = 3) -> Any:
    """A random JSON value: scalars, hostile strings and numbers, small nested containers."""
    roll = rng.random()
    if depth <= 0 or roll < 0.45:
        return rng.choice(
            (None, True, False, hostile_number(rng), hostile_string(rng), plain_word(rng))
        )
    if roll < 0.7:
        return [json_value(rng, depth - 1) for _ in range(rng.randint(0, 4))]
    pairs = Pairs(
        (hostile_string(rng), json_value(rng, depth - 1)) for _ in range(rng.randint(0, 4))
    )
    if pairs and rng.random() < 0.2:
        pairs.append((pairs[0][0], json_value(rng, depth - 1)))  # a repeated key
    return pairs


def nested(depth: int, *, kind: str = "array") -> Token:
    """`depth` levels of arrays or objects around a 1, written without recursion."""
    if kind == "array":
        return Token("[" * depth + "1" + "]" * depth)
    return Token('{"k":' * depth + "1" + "}" * depth)
