"""JSON Schema files generated from the wire types: `schemas/` is never edited by hand.

Per method, `<method>.params.json` and `<method>.result.json`; per message the server sends
unasked, `to_client.<name>.params.json` (and `.result.json` for a request); plus
`envelope.json` with the request union (tagged on `method`), the two response shapes and the
error object. File names
replace `/` and `$` so every method name makes a portable file name.

The Python client's typed method constants (`memproc/client/methods.py`) are generated here
too, from the same table: the client may not import the server, and nobody copies the table by
hand.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Union

import msgspec

from memproc.server.methods import METHODS
from memproc.wire.envelope import ErrorResponse, Notification, SuccessResponse
from memproc.wire.outbound import SERVER_MESSAGES
from memproc.wire.requests import request_types

DRAFT = "https://json-schema.org/draft/2020-12/schema"

# The request union of this server's methods, built once from the method table. Building it
# imports every params type: that is why it lives here, where only schema generation and
# clients look, and not beside the table that answers the first `ping`.
REQUEST_TYPES: dict[str, type] = request_types((method.name, method.params) for method in METHODS)
AnyRequest = Union[tuple(REQUEST_TYPES.values())]  # type: ignore[valid-type]  # noqa: UP007


def _file_stem(method_name: str) -> str:
    return method_name.replace("$/", "dollar.").replace("/", ".")


def _document(title: str, schema: dict[str, Any]) -> bytes:
    document = {"$schema": DRAFT, "title": title, **schema}
    return msgspec.json.format(msgspec.json.encode(document), indent=2) + b"\n"


def generate_schemas() -> dict[str, bytes]:
    """File name -> content, for every file `schemas/` must hold."""
    files: dict[str, bytes] = {}
    for method in METHODS:
        stem = _file_stem(method.name)
        files[f"{stem}.params.json"] = _document(
            f"{method.name} params", msgspec.json.schema(method.params)
        )
        files[f"{stem}.result.json"] = _document(
            f"{method.name} result", msgspec.json.schema(method.result)
        )
    for message in SERVER_MESSAGES:
        stem = "to_client." + _file_stem(message.name)
        files[f"{stem}.params.json"] = _document(
            f"{message.name} params (server to client)", msgspec.json.schema(message.params_type)
        )
        if message.result is not None:
            files[f"{stem}.result.json"] = _document(
                f"{message.name} result (client to server)",
                msgspec.json.schema(message.result_type),
            )
    (request, success, error, notification), components = msgspec.json.schema_components(
        [AnyRequest, SuccessResponse, ErrorResponse, Notification], ref_template="#/$defs/{name}"
    )
    envelope = {
        "$defs": components,
        "description": "A line on stdin is a request; a line on stdout a response or notification.",
        "oneOf": [request, {"oneOf": [success, error]}, notification],
    }
    files["envelope.json"] = _document("memproc JSON-RPC envelope", envelope)
    return files


def write_schemas(directory: str) -> None:
    os.makedirs(directory, exist_ok=True)
    expected = generate_schemas()
    for name in os.listdir(directory):
        if name.endswith(".json") and name not in expected:
            os.remove(os.path.join(directory, name))
    for name, content in expected.items():
        with open(os.path.join(directory, name), "wb") as handle:
            handle.write(content)


def diff_schemas(directory: str) -> list[str]:
    """Human-readable differences between `directory` and the generated schemas."""
    expected = generate_schemas()
    present = (
        {n for n in os.listdir(directory) if n.endswith(".json")}
        if os.path.isdir(directory)
        else set()
    )
    problems = [f"missing: {name}" for name in sorted(set(expected) - present)]
    problems += [f"unexpected: {name}" for name in sorted(present - set(expected))]
    for name in sorted(present & set(expected)):
        with open(os.path.join(directory, name), "rb") as handle:
            if handle.read() != expected[name]:
                problems.append(f"differs: {name}")
    return problems


# -- the Python client's method constants ----------------------------------------------------

CLIENT_METHODS_PATH = Path(__file__).resolve().parent.parent / "client" / "methods.py"
CLIENT_METHODS_HEADER = '''"""Every method of the server's table, typed by its params and result.

Generated from `memproc.server.methods.METHODS` by `memproc schema` (`make schemas`): do not
edit. `memproc schema --check` and tests/test_client_methods.py fail when it drifts.
Use: `client.call(MEMORY_REMEMBER, RememberParams(...))` returns a `RememberResult`.
"""

from __future__ import annotations

from typing import Any

from memproc.client.method import Method
from memproc.wire import (
'''


def client_constant(method_name: str) -> str:
    """`memory.remember` -> MEMORY_REMEMBER, `$/cancelRequest` -> CANCEL_REQUEST."""
    words = re.sub(r"([a-z])([A-Z])", r"\1_\2", method_name.removeprefix("$/"))
    return re.sub(r"[^A-Za-z0-9]+", "_", words).upper()


def _wire_ref(cls: type) -> str:
    package, _, module = cls.__module__.rpartition(".")
    assert package == "memproc.wire", f"{cls} is not a wire type"
    return f"{module}.{cls.__qualname__}"


def client_methods_source() -> str:
    """The text of `memproc/client/methods.py`, laid out as `ruff format` leaves it."""
    refs = [_wire_ref(cls) for method in METHODS for cls in (method.params, method.result)]
    modules = sorted({ref.partition(".")[0] for ref in refs})
    lines = [CLIENT_METHODS_HEADER.rstrip("\n")]
    lines += [f"    {module}," for module in modules]
    lines.append(")")
    for method in METHODS:
        writes = ["    writes=True,"] if method.writes else []
        lines += [
            "",
            f"{client_constant(method.name)} = Method(",
            f'    "{method.name}",',
            f"    {_wire_ref(method.params)},",
            f"    {_wire_ref(method.result)},",
            *writes,
            ")",
        ]
    lines += ["", "ALL: tuple[Method[..., Any, Any], ...] = ("]
    lines += [f"    {client_constant(method.name)}," for method in METHODS]
    lines += [")"]
    return "\n".join(lines) + "\n"


def diff_client_methods(path: Path = CLIENT_METHODS_PATH) -> list[str]:
    """["differs: <path>"] if the client's method constants are not what the table generates."""
    current = path.read_text() if path.is_file() else None
    return [] if current == client_methods_source() else [f"differs: {path}"]


def write_client_methods(path: Path = CLIENT_METHODS_PATH) -> None:
    path.write_text(client_methods_source())
