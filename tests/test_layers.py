"""Each layer knows only its neighbour, and all SQL lives in the store: checked on the source."""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import memproc

PACKAGE_DIR = Path(memproc.__file__).resolve().parent
SQL_START = re.compile(
    r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|REPLACE|BEGIN|COMMIT|ROLLBACK|"
    r"SAVEPOINT|RELEASE|VACUUM|ATTACH|WITH\s+RECURSIVE)\b"
)


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE_DIR.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE_DIR.rglob("*.py"))}


def imported_modules(source: str, name: str, is_package: bool) -> set[str]:
    """Every module `source` imports, as absolute dotted names, including `from a import b`
    as both `a` and `a.b` (b may be a submodule). Imports inside functions count too."""
    package = name if is_package else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def imports_of(name: str) -> set[str]:
    path = modules()[name]
    return imported_modules(path.read_text(), name, path.name == "__init__.py")


def in_layer(name: str, layer: str) -> bool:
    return name == layer or name.startswith(layer + ".")


# The names of kinds and states: the one module of the wire that the layers below may import.
VOCABULARY = "memproc.wire.vocabulary"


def violations(layer: str, forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()) -> list[str]:
    """Imports from `layer` of anything in `forbidden`, but for the modules in `allowed`."""
    found = []
    for name in modules():
        if not in_layer(name, layer):
            continue
        for target in sorted(imports_of(name)):
            if any(in_layer(target, ok) for ok in allowed):
                continue
            if any(in_layer(target, bad) for bad in forbidden):
                found.append(f"{name} imports {target}")
    return found


# -- the checker itself ----------------------------------------------------------------------


def test_the_import_parser_sees_every_form() -> None:
    source = (
        "import memproc.server.framing\n"
        "import memproc.server.service as svc\n"
        "from memproc.server import dispatch\n"
        "from ..server.methods import METHODS\n"
        "from . import sibling\n"
        "def f():\n"
        "    from memproc.ops.memories import memory\n"
    )
    found = imported_modules(source, "memproc.store.database", is_package=False)
    assert {
        "memproc.server.framing",
        "memproc.server.service",
        "memproc.server.dispatch",
        "memproc.server.methods",
        "memproc.store.sibling",
        "memproc.ops.memories.memory",
    } <= found


def test_the_package_has_the_layers_the_rules_talk_about() -> None:
    names = modules()
    for expected in (
        "memproc.store.database",
        "memproc.ops.memories.memory",
        "memproc.wire.messages",
        "memproc.server.dispatch",
        "memproc.retrieval.pipeline",
    ):
        assert expected in names
    assert "memproc.server.service" in imports_of("memproc.cli")  # the parser finds real imports


# -- the rules: each folder imports only what lies below it ----------------------------------------


def test_wire_imports_nothing_else_of_memproc() -> None:
    """The wire types are the contract: a client, or any layer, can import them alone."""
    found = [
        f"{name} imports {target}"
        for name in modules()
        if in_layer(name, "memproc.wire")
        for target in sorted(imports_of(name))
        if in_layer(target, "memproc") and not in_layer(target, "memproc.wire")
    ]
    assert found == []


def test_nothing_below_the_server_imports_it() -> None:
    """The server sits on top: only the entry points (`memproc serve`, `memproc schema`) start it.
    State the transport needs reaches the layers below as objects it passes down."""
    entry_points = {"memproc.cli", "memproc.__main__"}
    found = [
        f"{name} imports {target}"
        for name in modules()
        if not in_layer(name, "memproc.server") and name not in entry_points
        for target in sorted(imports_of(name))
        if in_layer(target, "memproc.server")
    ]
    assert found == []


def test_ops_never_import_the_server() -> None:
    assert violations("memproc.ops", ("memproc.server", "memproc.cli")) == []


def test_ops_never_name_request_ids() -> None:
    """Ops know params and results, never the envelope: ids and responses belong to dispatch."""
    assert violations("memproc.ops", ("memproc.wire.envelope", "memproc.wire.requests")) == []


def test_retrieval_imports_neither_ops_nor_wire() -> None:
    """Retrieval works on store rows and vectors; turning them into results is the ops' job."""
    forbidden = ("memproc.ops", "memproc.wire", "memproc.server", "memproc.runtime")
    assert violations("memproc.retrieval", forbidden) == []


def test_store_knows_nothing_of_wire_ops_or_server() -> None:
    """Nothing but the vocabulary: a row's status is of the type a result's status is."""
    forbidden = (
        "memproc.wire",
        "memproc.server",
        "memproc.ops",
        "memproc.retrieval",
        "memproc.runtime",
    )
    assert violations("memproc.store", forbidden, allowed=(VOCABULARY,)) == []


def test_the_store_does_use_the_vocabulary() -> None:
    """The exception above is used, so the test that allows it is not vacuous."""
    assert VOCABULARY in imports_of("memproc.store.records")


def test_the_state_machine_is_pure() -> None:
    """`lifecycle` names its states from the vocabulary and raises memproc errors: nothing
    else of memproc (no store, no wire types, no ops) so it can be tested transition by
    transition."""
    found = {t for t in imports_of("memproc.lifecycle") if in_layer(t, "memproc")}
    assert found == {
        VOCABULARY,
        f"{VOCABULARY}.Status",
        "memproc.errors",
        "memproc.errors.Conflict",
    }


def test_the_vocabulary_imports_nothing_of_memproc() -> None:
    assert [t for t in imports_of(VOCABULARY) if in_layer(t, "memproc")] == []


def test_gate_imports_neither_store_nor_wire() -> None:
    """The gate is pure: no store, no wire, no ops, no models, no I/O modules."""
    forbidden = (
        "memproc.store",
        "memproc.wire",
        "memproc.server",
        "memproc.ops",
        "memproc.models",
        "memproc.retrieval",
        "memproc.runtime",
        "apsw",
        "os",
        "subprocess",
        "socket",
    )
    assert "memproc.gate.evaluate" in modules()
    assert violations("memproc.gate", forbidden) == []
    for name in modules():
        if in_layer(name, "memproc.gate"):
            assert {t for t in imports_of(name) if in_layer(t, "memproc")} <= {
                t for t in imports_of(name) if in_layer(t, "memproc.gate")
            }, name


def test_messages_are_pure_types() -> None:
    found = [t for t in imports_of("memproc.wire.messages") if in_layer(t, "memproc")]
    assert all(in_layer(t, VOCABULARY) for t in found)


@pytest.mark.parametrize(
    "name", [n for n in modules() if n.startswith("memproc.wire.") and n.endswith("_messages")]
)
def test_family_message_modules_import_only_other_message_modules(name: str) -> None:
    parts = [
        t.split(".")
        for t in imports_of(name)
        if in_layer(t, "memproc") and not in_layer(t, VOCABULARY)
    ]
    assert parts and all(p[:2] == ["memproc", "wire"] and p[2].endswith("messages") for p in parts)


def test_only_the_client_imports_the_client() -> None:
    """The Python client is for harnesses: the service never loads it."""
    assert "memproc.client.sync" in modules()
    found = [
        f"{name} imports {target}"
        for name in modules()
        if not in_layer(name, "memproc.client")
        for target in sorted(imports_of(name))
        if in_layer(target, "memproc.client")
    ]
    assert found == []


def test_the_client_imports_only_wire_and_errors() -> None:
    """The client is built from the contract alone (the wire types and the error table), so
    it never pulls in the store, the models or the server."""
    allowed = ("memproc.client", "memproc.wire", "memproc.errors")
    found = [
        f"{name} imports {target}"
        for name in modules()
        if in_layer(name, "memproc.client")
        for target in sorted(imports_of(name))
        if in_layer(target, "memproc") and not any(in_layer(target, ok) for ok in allowed)
    ]
    assert found == []


def test_importing_the_client_loads_no_other_part_of_memproc() -> None:
    """What the import rules say, checked on a live interpreter (imports made at run time
    by the wire's lazy references included)."""
    probe = (
        "import sys, memproc.client; "
        "print(sorted(m for m in sys.modules if m.startswith('memproc') and not "
        "m.startswith(('memproc.client', 'memproc.wire', 'memproc.errors'))))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert completed.stdout.strip() == "['memproc']"


def test_nothing_outside_the_server_touches_dispatch_or_framing() -> None:
    """Not even the entry points: they start the service, which alone reads and writes lines."""
    found = [
        f"{name} imports {target}"
        for name in modules()
        if not in_layer(name, "memproc.server")
        for target in imports_of(name)
        if in_layer(target, "memproc.server.dispatch") or in_layer(target, "memproc.server.framing")
    ]
    assert found == []


# -- benchmarks use what the package offers --------------------------------------------------------

BENCHMARKS_DIR = PACKAGE_DIR.parent.parent / "benchmarks"


def private_uses(source: str) -> list[str]:
    """`x._name` for any x but self and cls, `getattr(x, "_name")` and `from m import _name`:
    the ways code reaches into another's private state."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and _private(node.attr):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "getattr":
            name = node.args[1] if len(node.args) > 1 else None
            if isinstance(name, ast.Constant) and _private(str(name.value)):
                found.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom):
            found += [f"import {a.name}" for a in node.names if _private(a.name)]
    return found


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_private_use_finder_finds_them() -> None:
    source = "self._ok\nruntime._index\ngetattr(m, '_ready')\nfrom a import _b\nx.__class__\n"
    assert sorted(private_uses(source)) == ["getattr(m, '_ready')", "import _b", "runtime._index"]


@pytest.mark.parametrize("path", sorted(BENCHMARKS_DIR.glob("*.py")), ids=lambda p: p.name)
def test_benchmarks_reach_into_no_private_state(path: Path) -> None:
    """A benchmark that sets a private field measures a runtime no client can build, and
    breaks silently when the field moves: it uses public methods
    (`VectorService.install_embedder`, `OnnxModel.session` and `feeds`)."""
    assert private_uses(path.read_text()) == []


# -- SQL lives in the store ------------------------------------------------------------------


def _docstring_nodes(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def sql_literals(source: str) -> Iterator[str]:
    tree = ast.parse(source)
    skip = _docstring_nodes(tree) | {
        id(part)
        for node in ast.walk(tree)
        if isinstance(node, ast.JoinedStr)
        for part in node.values
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in skip and SQL_START.match(node.value):
                yield node.value
        elif isinstance(node, ast.JoinedStr):
            text = "".join(
                part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
            if SQL_START.match(text):
                yield text


def test_the_sql_finder_finds_sql() -> None:
    source = 'x = "SELECT 1"\ny = f"INSERT INTO {t} VALUES (?)"\nz = "Delete the thing"\n'
    assert list(sql_literals(source)) == ["SELECT 1", "INSERT INTO {} VALUES (?)"]
    assert list(sql_literals('"""UPDATE notes: a docstring."""\n')) == []


def test_the_store_does_contain_sql() -> None:
    store_sql = [
        literal
        for name, path in modules().items()
        if in_layer(name, "memproc.store")
        for literal in sql_literals(path.read_text())
    ]
    assert any(literal.startswith("SELECT") for literal in store_sql)


@pytest.mark.parametrize("name", [n for n in modules() if not in_layer(n, "memproc.store")])
def test_no_sql_outside_the_store(name: str) -> None:
    assert list(sql_literals(modules()[name].read_text())) == []


def test_starting_the_service_imports_no_numerical_or_model_library() -> None:
    """Start-up stays in milliseconds: numpy, onnxruntime and tokenizers load with the models,
    on the background thread, never on the path from spawn to the first `ping`."""
    import subprocess
    import sys

    probe = (
        "import sys, memproc.cli, memproc.server.service, memproc.server.methods, memproc.runtime; "
        "print(sorted(m for m in ('numpy', 'onnxruntime', 'tokenizers') if m in sys.modules))"
    )
    completed = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert completed.stdout.strip() == "[]"


# What answering the first `ping` may import: framing, dispatch, the method table's names and
# the connection-level handlers. Handlers, the store, the gate, numpy and onnxruntime are
# imported when a request first needs them (benchmarks/startup.py measures the effect).
FIRST_RESPONSE_MEMPROC_MODULES = {
    "memproc",
    "memproc.background",
    "memproc.cancel",
    "memproc.cli",
    "memproc.config",
    "memproc.dialect",
    "memproc.errors",
    "memproc.logs",
    "memproc.models",
    "memproc.models.hash_record",
    "memproc.models.manager",
    "memproc.models.manifest",
    "memproc.ops",
    "memproc.ops.context",
    "memproc.retrieval",
    "memproc.retrieval.vectors",
    "memproc.runtime",
    "memproc.scopes",
    "memproc.server",
    "memproc.server.dialect",
    "memproc.server.dispatch",
    "memproc.server.errors",
    "memproc.server.framing",
    "memproc.server.methods",
    "memproc.server.ordering",
    "memproc.server.service",
    "memproc.server.session",
    "memproc.server.session_methods",
    "memproc.wire",
    "memproc.wire.envelope",
    "memproc.wire.messages",
    "memproc.wire.outbound",
    "memproc.wire.vocabulary",
}
NEVER_BEFORE_FIRST_RESPONSE = ("numpy", "onnxruntime", "tokenizers", "apsw", "sqlite_vec")


def test_the_first_ping_imports_only_the_transport(tmp_path: Path) -> None:
    probe = Path(__file__).with_name("first_response_modules.py")
    out, models = tmp_path / "modules.json", tmp_path / "no-models"
    models.mkdir()
    completed = subprocess.run(
        [sys.executable, str(probe), str(out), str(tmp_path / "memory.db"), str(models)],
        input=b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n',
        capture_output=True,
        timeout=60,
        check=True,
    )
    assert b'"result":{}' in completed.stdout
    modules = set(json.loads(out.read_text()))
    assert {m for m in modules if m.startswith("memproc")} <= FIRST_RESPONSE_MEMPROC_MODULES
    assert not [m for m in modules if m.split(".")[0] in NEVER_BEFORE_FIRST_RESPONSE]
