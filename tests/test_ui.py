"""`memproc ui` over HTTP, without a browser: the token guards every request, the endpoints
answer with the protocol's validation and errors, and the viewer keeps to its layer."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

import test_layers as layers
from indexkit import fill_indexed
from memproc.config import Config
from memproc.ops.context import OpContext
from memproc.ops.memories import memory as memory_ops
from memproc.runtime import Runtime
from memproc.wire.messages import RememberParams
from test_readme_commands import PROGRAM, examples
from uikit import Viewer, running, running_viewer

SCOPE = "p"


@pytest.fixture(scope="module")
def viewer(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Viewer]:
    """A viewer with no models over a store holding one memory."""
    folder = tmp_path_factory.mktemp("ui")
    (folder / "no-models").mkdir()
    runtime = Runtime(Config(db=str(folder / "memory.db"), embedder="none", reranker="none"))
    try:
        params = RememberParams(scope=SCOPE, kind="fact", content="the cache lives in /var/rel")
        memory_ops.remember(OpContext(runtime=runtime), params)
    finally:
        runtime.close()
    with running_viewer(folder / "memory.db", folder / "no-models") as started:
        yield started


def request(
    viewer: Viewer, method: str, path: str, *, body: Any = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    """One HTTP request, redirects not followed: (status, headers, body)."""
    netloc = urlsplit(viewer.base).netloc
    connection = http.client.HTTPConnection(netloc, timeout=60)
    data = None if body is None else json.dumps(body).encode()
    if data is not None:
        headers.setdefault("Content-Type", "application/json")
    try:
        connection.request(method, path, body=data, headers=headers)
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        connection.close()


DECIDE = {"scope": SCOPE, "revision_id": "x", "decision": "approve", "reason": "r", "actor": "a"}


@pytest.mark.parametrize(
    ("method", "path", "body"),
    [
        ("GET", "/", None),
        ("GET", "/static/app.js", None),
        ("GET", "/api/scopes", None),
        ("GET", f"/api/memory.list?scope={SCOPE}", None),
        ("GET", "/?token=not-the-token", None),
        ("POST", "/api/procedure.review.decide", DECIDE),
    ],
)
def test_a_request_without_the_token_gets_403(
    viewer: Viewer, method: str, path: str, body: Any
) -> None:
    status, _, said = request(viewer, method, path, body=body)
    assert status == 403 and b"forbidden" in said
    status, _, _ = request(viewer, method, path, body=body, **{"X-Memproc-Token": "wrong"})
    assert status == 403


def test_the_printed_url_sets_the_cookie_that_later_requests_carry(viewer: Viewer) -> None:
    status, headers, _ = request(viewer, "GET", f"/?token={viewer.token}")
    assert status == 303 and headers["Location"] == "/"
    cookie = headers["Set-Cookie"].split(";")[0]
    assert "HttpOnly" in headers["Set-Cookie"] and "SameSite=Strict" in headers["Set-Cookie"]
    status, headers, page = request(viewer, "GET", "/", Cookie=cookie)
    assert status == 200 and b"/static/app.js" in page
    assert headers["Content-Security-Policy"].startswith("default-src 'self'")
    status, _, body = request(viewer, "GET", "/api/scopes", Cookie=cookie)
    assert status == 200 and json.loads(body) == {"scopes": [SCOPE]}


def api(viewer: Viewer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    status, _, said = request(viewer, method, path, body=body, **{"X-Memproc-Token": viewer.token})
    return status, json.loads(said)


def test_reads_are_the_protocols_methods(viewer: Viewer) -> None:
    status, listed = api(viewer, "GET", f"/api/memory.list?scope={SCOPE}&limit=5")
    assert status == 200 and [m["content"] for m in listed["items"]] == [
        "the cache lives in /var/rel"
    ]
    status, found = api(viewer, "GET", f"/api/memory.search?scope={SCOPE}&query=cache")
    assert status == 200 and found["mode"] == "lexical"
    assert found["degraded"] == "no embedder installed: lexical results only"


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "kind"),
    [
        ("GET", f"/api/memory.list?scope={SCOPE}&limit=abc", None, 400, "invalid_params"),
        ("GET", f"/api/memory.list?scope={SCOPE}&limit=0", None, 400, "invalid_params"),
        ("GET", f"/api/memory.history?scope={SCOPE}&id=missing", None, 404, "not_found"),
        ("GET", "/api/procedure.review.decide", None, 405, "method_not_allowed"),
        ("POST", "/api/memory.list", {"scope": SCOPE}, 405, "method_not_allowed"),
        ("GET", "/api/memory.remember", None, 404, "not_found"),
        ("POST", "/api/procedure.review.decide", {**DECIDE, "extra": 1}, 400, "invalid_params"),
        ("POST", "/api/procedure.review.decide", DECIDE, 404, "not_found"),
    ],
)
def test_errors_are_the_protocols_with_an_http_status(
    viewer: Viewer, method: str, path: str, body: Any, status: int, kind: str
) -> None:
    got, answer = api(viewer, method, path, body)
    assert (got, answer["error"]["kind"]) == (status, kind)


def test_the_write_needs_a_json_body(viewer: Viewer) -> None:
    """A cross-site form can post text or form data, never application/json."""
    headers = {"X-Memproc-Token": viewer.token, "Content-Type": "text/plain"}
    status, _, _ = request(viewer, "POST", "/api/procedure.review.decide", body=DECIDE, **headers)
    assert status == 415


def test_only_the_entry_point_imports_the_viewer_and_the_viewer_not_the_server() -> None:
    """The viewer stands beside the JSON-RPC server, on the ops; `memproc serve` never loads
    it (cli.py imports it inside the `ui` command only)."""
    importers = [
        name
        for name in layers.modules()
        if not layers.in_layer(name, "memproc.ui")
        and any(layers.in_layer(t, "memproc.ui") for t in layers.imports_of(name))
    ]
    assert importers == ["memproc.cli"]
    assert layers.violations("memproc.ui", ("memproc.server",)) == []
    assert not any(m.startswith("memproc.ui") for m in layers.FIRST_RESPONSE_MEMPROC_MODULES)


def test_the_readmes_example_serves_the_store_it_names(tmp_path: Path, minilm_dir: Path) -> None:
    """The Viewer section's command, as written, in a directory holding memory.db and the
    model cache: it prints a URL whose page answers, and SIGTERM stops it."""
    fill_indexed(tmp_path / "memory.db", minilm_dir.parent, scope="/work/app")
    (tmp_path / ".cache").mkdir()
    (tmp_path / ".cache" / "models").symlink_to(minilm_dir.parent)
    (command,) = examples("Viewer")
    assert command[:2] == [PROGRAM, "ui"]
    with running(command[1:], cwd=tmp_path) as viewer:
        status, found = api(viewer, "GET", "/api/memory.search?scope=/work/app&query=caching")
    assert status == 200 and found["mode"] == "hybrid" and found["degraded"] is None


def test_ctrl_c_stops_it_cleanly(tmp_path: Path) -> None:
    """SIGINT as SIGTERM: the requests in progress are answered, then exit 0 (checked as the
    viewer is left)."""
    fill_indexed(tmp_path / "memory.db", tmp_path / "no-models")
    with running_viewer(tmp_path / "memory.db", tmp_path / "no-models") as viewer:
        viewer.process.send_signal(signal.SIGINT)
        viewer.process.wait(timeout=120)


def test_the_page_ships_with_the_package() -> None:
    from memproc.ui.server import static_files

    assert set(static_files()) == {"index.html", "app.js", "style.css"}


def test_a_missing_database_is_refused_not_created(tmp_path: Path) -> None:
    """A viewer reads a store someone else wrote: a typo in --db must not make an empty one."""
    missing = tmp_path / "nothing-here.db"
    done = subprocess.run(
        [sys.executable, "-m", "memproc", "ui", "--db", str(missing)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2 and "no database at" in done.stderr
    assert not missing.exists()
