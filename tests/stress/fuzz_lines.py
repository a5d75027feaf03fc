"""Whole request lines for the protocol fuzzer: valid requests, mutated ones, and garbage.

The mix (see `LineMaker.KINDS`) keeps a good share of requests valid, so the fuzzer reaches
storage and the handlers, not only the decoder; the rest attack each layer in turn: params
(one field made hostile, a field dropped or repeated, sizes at each limit), the envelope (ids of
every JSON type, a wrong `jsonrpc`, unknown methods and members, notifications, batches), the
JSON text (truncated, bit-flipped, invalid UTF-8, NaN, lone surrogates, deep nesting) and the
framing (lines at, just under and just over `max_line_bytes`, blank lines).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fuzz_params import BUILDERS, Draw
from fuzz_values import (
    Pairs,
    Rng,
    Token,
    encode,
    hostile_number,
    hostile_string,
    json_value,
    nested,
    plain_word,
    random_text,
    sized_text,
)

from memproc.server.dispatch import MAX_JSON_DEPTH

# Every length limit the protocol types or the fuzz server's settings impose, so that strings
# land on each side of each one.
TYPE_LIMITS = (64, 128, 256, 512, 1024, 2048, 4000, 4096, 8192, 16_000)

IDS: tuple[Any, ...] = (
    None,
    True,
    False,
    1.5,
    1.0,
    Token("1e2"),
    Token("-0"),
    2**63 - 1,
    2**63,
    -(2**63),
    -(2**63) - 1,
    "",
    "i" * 256,
    "i" * 257,
    "\ud800",
    "id\x00",
    {"id": 1},
    [1],
)
METHOD_NAMES: tuple[Any, ...] = (
    "memory.nope",
    "Memory.Remember",
    "",
    "rpc.discover",
    "memory.remember\x00",
    "ping ",
    5,
    None,
    ["ping"],
    {"name": "ping"},
)
JSONRPC_VALUES: tuple[Any, ...] = ("1.0", 2.0, "2.0 ", "", None, Token('"2\\u002e0"'), ["2.0"])
INVALID_UTF8 = (b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80")
SPLICES = (b"NaN", b"Infinity", b"-Infinity", b'"\\ud800"', b",", b"}", b"]", b":", b"\\", b"\x00")
# Drawn three times as often as other methods, so that the lifecycle, review and paging methods
# find records to act on.
CREATORS = frozenset(
    {
        "memory.remember",
        "memory.remember_batch",
        "evidence.put",
        "checkpoint.save",
        "procedure.create",
    }
)


@dataclass(frozen=True)
class Line:
    """One line to send (without its newline) and, when it was built as a request from known
    params, the method and params, so a successful answer can teach `Known` new names."""

    data: bytes
    kind: str
    method: str | None = None
    params: Any = None


class LineMaker:
    """Draws one line at a time from `draw.rng`; KINDS weighs the kinds of line."""

    KINDS: tuple[tuple[str, int], ...] = (
        ("valid", 35),
        ("params", 25),
        ("envelope", 10),
        ("json", 8),
        ("bytes", 12),
        ("size", 5),
        ("depth", 5),
    )

    def __init__(self, draw: Draw, max_line_bytes: int) -> None:
        self.draw = draw
        self.rng: Rng = draw.rng
        self.max_line_bytes = max_line_bytes
        self.methods = tuple(BUILDERS)
        self.method_weights = [3 if name in CREATORS else 1 for name in self.methods]
        self._serial = 0

    def next(self) -> Line:
        names = [name for name, _ in self.KINDS]
        weights = [weight for _, weight in self.KINDS]
        kind = self.rng.choices(names, weights=weights)[0]
        line: Line = getattr(self, f"_{kind}")()
        # A newline inside would make two lines; the framing tests cover that, not the fuzzer.
        return Line(line.data.replace(b"\n", b""), kind, line.method, line.params)

    # -- building blocks --------------------------------------------------------------------------

    def request_id(self) -> Any:
        self._serial += 1
        return self._serial if self.rng.random() < 0.5 else f"f{self._serial}"

    def request(self, method: Any, params: Any, *, request_id: Any = ...) -> dict[str, Any]:
        message: dict[str, Any] = {"jsonrpc": "2.0"}
        if request_id is not None:
            message["id"] = self.request_id() if request_id is ... else request_id
        message["method"] = method
        if params is not None or self.rng.random() < 0.1:
            message["params"] = params
        return message

    def wire(self, value: Any) -> bytes:
        return encode(value, ascii_only=self.rng.random() < 0.2)

    def method(self) -> str:
        return self.rng.choices(self.methods, weights=self.method_weights)[0]

    def valid_request(self) -> tuple[str, Any, bytes]:
        method = self.method()
        params = BUILDERS[method](self.draw)
        return method, params, self.wire(self.request(method, params))

    # -- the kinds ----------------------------------------------------------------------------

    def _valid(self) -> Line:
        method, params, data = self.valid_request()
        return Line(data, "valid", method, params)

    def _params(self) -> Line:
        method = self.method()
        params = mutate(self.rng, BUILDERS[method](self.draw), self.draw.limits)
        return Line(self.wire(self.request(method, params)), "params", method, params)

    def _envelope(self) -> Line:
        method = self.method()
        message: Any = self.request(method, BUILDERS[method](self.draw))
        for change in self.rng.sample(ENVELOPE_MUTATIONS, self.rng.choice((1, 1, 2))):
            message = change(self.rng, message)
        if self.rng.random() < 0.15:
            message = _repeat_member(self.rng, message)
        return Line(self.wire(message), "envelope")

    def _json(self) -> Line:
        roll = self.rng.random()
        if roll < 0.4:
            batch = [self.request("ping", None) for _ in range(self.rng.randint(0, 3))]
            return Line(self.wire(batch), "json")
        if roll < 0.7:
            return Line(self.wire(json_value(self.rng, 4)), "json")
        members = Pairs((hostile_string(self.rng), json_value(self.rng, 2)) for _ in range(3))
        return Line(self.wire(members), "json")

    def _bytes(self) -> Line:
        data = self.valid_request()[2]
        roll = self.rng.random()
        if roll < 0.2:
            data = data[: self.rng.randrange(len(data))]
        elif roll < 0.4:
            data = _flip_bits(self.rng, data)
        elif roll < 0.55:
            data = _insert(self.rng, data, self.rng.choice(INVALID_UTF8))
        elif roll < 0.7:
            data = _insert(self.rng, data, self.rng.choice(SPLICES))
        elif roll < 0.85:
            data = self.rng.randbytes(self.rng.randint(1, 200))
        elif roll < 0.93:
            data = self.rng.choice((b" ", b"\t", b"\r", b" \t\r", b"\x0b\x0c"))
        else:
            data = self.rng.choice((b"\xef\xbb\xbf", b"\x00", b"\r")) + data
        return Line(data, "bytes")

    def _size(self) -> Line:
        cap = self.max_line_bytes
        target = self.rng.choice((cap - 1, cap, cap + 1, cap + 2, 3 * cap + 5))
        if self.rng.random() < 0.5:
            message = self.request("memory.remember", {"kind": "note", "content": ""})
            head = self.wire(message)
            return Line(
                head.replace(b'"content":""', b'"content":"' + b"a" * (target - len(head)) + b'"'),
                "size",
            )
        message = self.request("ping", None)
        data = self.wire(message)
        return Line(data[:-1] + b" " * (target - len(data)) + b"}", "size")

    def _depth(self) -> Line:
        # Either side of the metadata's limit (32) and of the line's (MAX_JSON_DEPTH), and far
        # past both, where a decoder without a limit of its own would run out of stack.
        depth = self.rng.choice(
            (31, 32, 33, 100, MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1, 2_000, 100_000)
        )
        shape = self.rng.choice(("array", "object"))
        where = self.rng.random()
        if where < 0.5:
            params = {"scope": "fuzz", "kind": "note", "content": "deep"}
            params["metadata"] = Pairs([("m", nested(depth, kind=shape))])
            return Line(self.wire(self.request("memory.remember", params)), "depth")
        if where < 0.7:
            return Line(self.wire(nested(depth, kind=shape)), "depth")
        if where < 0.85:
            return Line(self.wire(self.request("memory.list", nested(depth, kind=shape))), "depth")
        return Line(self.wire(self.request("ping", None, request_id=nested(depth))), "depth")


# -- mutations of the params -------------------------------------------------------------------

FREE_JSON_MEMBERS = ("metadata", "observation", "capabilities")


def mutate(rng: Rng, params: Any, limits: dict[str, int]) -> Any:
    """One or two hostile changes to valid params; each keeps the others' work."""
    if not isinstance(params, dict) or rng.random() < 0.08:
        return rng.choice(([], [params], "params", 0, True, None, Token("1e309")))
    mutated: Any = dict(params)
    for change in rng.sample(PARAM_MUTATIONS, rng.choice((1, 1, 2))):
        if isinstance(mutated, dict):
            mutated = change(rng, mutated, limits)
    return mutated


def hostile_value(rng: Rng, limits: dict[str, int]) -> Any:
    roll = rng.random()
    sizes = (*TYPE_LIMITS, *limits.values())
    if roll < 0.35:
        return hostile_string(rng, sizes)
    if roll < 0.5:
        return sized_text(rng, rng.choice(sizes) + rng.choice((-1, 0, 1)))
    if roll < 0.7:
        return hostile_number(rng)
    if roll < 0.9:
        return json_value(rng, 3)
    return rng.choice((None, True, [], {}, random_text(rng, 3)))


def _replace_leaf(rng: Rng, params: dict[str, Any], limits: dict[str, int]) -> Any:
    """Walk down from the params to a random member or item and replace it."""
    container: Any = params
    while True:
        keys = list(container) if isinstance(container, dict) else list(range(len(container)))
        if not keys:
            return params
        key = rng.choice(keys)
        child = container[key]
        if isinstance(child, dict | list) and child and rng.random() < 0.6:
            copied = dict(child) if isinstance(child, dict) else list(child)
            container[key] = copied
            container = copied
            continue
        container[key] = hostile_value(rng, limits)
        return params


def _drop_member(rng: Rng, params: dict[str, Any], limits: dict[str, int]) -> Any:
    if params:
        del params[rng.choice(list(params))]
    return params


def _add_member(rng: Rng, params: dict[str, Any], limits: dict[str, int]) -> Any:
    params[rng.choice(("zz_unknown", "Scope", "", "\ud800", "scope "))] = json_value(rng, 1)
    return params


def _free_json(rng: Rng, params: dict[str, Any], limits: dict[str, int]) -> Any:
    """Hostile JSON where the types take any JSON (metadata, observation, capabilities)."""
    key = next((key for key in FREE_JSON_MEMBERS if key in params), None)
    if key is not None:
        params[key] = Pairs((plain_word(rng), json_value(rng, 3)) for _ in range(3))
    return params


def _repeat_param(rng: Rng, params: dict[str, Any], limits: dict[str, int]) -> Any:
    """A member written twice, one of the two values hostile (which one the decoder keeps is
    the last, in memproc as in most JSON parsers)."""
    key = rng.choice(list(params)) if params else "scope"
    pairs = Pairs(params.items())
    pairs.insert(rng.randrange(len(pairs) + 1), (key, hostile_value(rng, limits)))
    return pairs


PARAM_MUTATIONS = (
    _replace_leaf,
    _replace_leaf,
    _replace_leaf,
    _drop_member,
    _add_member,
    _free_json,
    _free_json,
    _repeat_param,
)


# -- mutations of the envelope -------------------------------------------------------------------


def _any_id(rng: Rng, message: Any) -> Any:
    return {**message, "id": rng.choice(IDS)}


def _no_id(rng: Rng, message: Any) -> Any:
    """A notification: valid or not, it gets no answer unless its envelope is invalid."""
    return {key: value for key, value in message.items() if key != "id"}


def _bad_method(rng: Rng, message: Any) -> Any:
    return {**message, "method": rng.choice(METHOD_NAMES)}


def _bad_jsonrpc(rng: Rng, message: Any) -> Any:
    if rng.random() < 0.3:
        return {key: value for key, value in message.items() if key != "jsonrpc"}
    return {**message, "jsonrpc": rng.choice(JSONRPC_VALUES)}


def _extra_member(rng: Rng, message: Any) -> Any:
    return {**message, rng.choice(("extra", "result", "error", "ID", "Method")): 1}


def _params_not_object(rng: Rng, message: Any) -> Any:
    return {**message, "params": rng.choice(([], [1, 2], "x", 0, True, None))}


def _repeat_member(rng: Rng, message: Any) -> Any:
    """The envelope with one member written twice, the two values differing."""
    pairs = Pairs(message.items())
    key = rng.choice(list(message))
    other = {"id": rng.choice(IDS), "method": "ping", "jsonrpc": "1.0", "params": []}.get(key, 2)
    pairs.insert(rng.randrange(len(pairs) + 1), (key, other))
    return pairs


def _shuffled(rng: Rng, message: Any) -> Any:
    items = list(message.items())
    rng.shuffle(items)
    return dict(items)


ENVELOPE_MUTATIONS = (
    _any_id,
    _no_id,
    _no_id,
    _bad_method,
    _bad_jsonrpc,
    _extra_member,
    _params_not_object,
    _shuffled,
)


# -- mutations of the bytes ----------------------------------------------------------------------


def _flip_bits(rng: Rng, data: bytes) -> bytes:
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 3)):
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
    return bytes(flipped)


def _insert(rng: Rng, data: bytes, piece: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    return data[:at] + piece + data[at:]
