"""The viewer's HTTP server: the standard library's, on 127.0.0.1 only, behind a token.

Anyone on the machine can connect to a loopback port, and a web page in the user's browser can
send requests to one: so every request must carry the one-time token printed at start, either
as the `X-Memproc-Token` header or as the cookie set when the printed URL is first opened
(named after the port, so two viewers do not overwrite each other's). The cookie is
`SameSite=Strict`: another site's page cannot make the browser send it, and the one write
(POST) also needs a JSON body, which a cross-site form cannot send. Responses forbid framing,
scripts from anywhere else and caching, and send no referrer (the first URL holds the token).

HTTP/1.0, one request per connection: no idle keep-alive connection holds a thread, so a
shutdown waits only for requests in progress.
"""

from __future__ import annotations

import hmac
import logging
import os
import secrets
import signal
import sys
import threading
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

import msgspec

from memproc.config import Config
from memproc.errors import MemprocError
from memproc.logs import configure_logging
from memproc.runtime import Runtime
from memproc.ui.api import Answer, Api, query_params

log = logging.getLogger("memproc.ui")

TOKEN_HEADER = "X-Memproc-Token"
MAX_BODY_BYTES = 1 << 20
# What each static file is served as; files of other kinds are not served.
CONTENT_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
}
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'; form-action 'self'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def static_files() -> dict[str, tuple[bytes, str]]:
    """The page's files, read once at start: name -> (bytes, content type)."""
    folder = resources.files("memproc.ui") / "static"
    found = {}
    for entry in folder.iterdir():
        suffix = "." + entry.name.rpartition(".")[2]
        if entry.is_file() and suffix in CONTENT_TYPES:
            found[entry.name] = (entry.read_bytes(), CONTENT_TYPES[suffix])
    return found


class ViewerServer(ThreadingHTTPServer):
    """One thread per request; `server_close` waits for those still running."""

    daemon_threads = False
    block_on_close = True

    def __init__(self, port: int, api: Api) -> None:
        super().__init__(("127.0.0.1", port), Handler)
        self.api = api
        self.token = secrets.token_urlsafe(32)
        self.files = static_files()
        self.cookie_name = f"memproc_ui_{self.port}"

    @property
    def port(self) -> int:
        return int(self.server_address[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/?token={self.token}"

    def authorized(self, presented: str | None) -> bool:
        return presented is not None and hmac.compare_digest(presented, self.token)


class Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    timeout = 30  # a client that stops sending does not hold its thread for ever
    server_version = "memproc-ui"

    def do_GET(self) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if url.path == "/" and self._opens_with_token(query):
            return
        if not self._checked():
            return
        if url.path == "/api/scopes":
            self._send_answer(self.server.api.scopes())
        elif url.path.startswith("/api/"):
            answer = self.server.api.call(url.path[5:], query_params(query), post=False)
            self._send_answer(answer)
        else:
            self._send_file("index.html" if url.path == "/" else url.path.removeprefix("/static/"))

    def do_POST(self) -> None:
        url = urlsplit(self.path)
        if not self._checked():
            return
        if not url.path.startswith("/api/"):
            self._send_error(HTTPStatus.NOT_FOUND, "no such page")
            return
        body = self._json_body()
        if body is not None:
            self._send_answer(self.server.api.call(url.path[5:], body, post=True))

    def _opens_with_token(self, query: dict[str, list[str]]) -> bool:
        """The printed URL: set the cookie and send the browser on to `/`, so the token does
        not stay in the address bar."""
        given = query.get("token", [])
        if not given or not self.server.authorized(given[-1]):
            return False
        self.send_response(HTTPStatus.SEE_OTHER)
        cookie = f"{self.server.cookie_name}={self.server.token}"
        self.send_header("Set-Cookie", f"{cookie}; Path=/; HttpOnly; SameSite=Strict")
        self.send_header("Location", "/")
        self._finish_headers(0)
        return True

    def _checked(self) -> bool:
        """Whether the request carries the token; if not, it is answered 403 here."""
        presented = self.headers.get(TOKEN_HEADER) or self._cookie()
        if self.server.authorized(presented):
            return True
        self._send_error(HTTPStatus.FORBIDDEN, "forbidden: open the URL `memproc ui` printed")
        return False

    def _cookie(self) -> str | None:
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(self.headers.get("Cookie", ""))
        except CookieError:
            return None
        morsel = jar.get(self.server.cookie_name)
        return None if morsel is None else morsel.value

    def _json_body(self) -> Any:
        """The POST body as JSON, or None after answering why it cannot be read."""
        if self.headers.get_content_type() != "application/json":
            self._send_error(HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "send application/json")
            return None
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send_error(HTTPStatus.LENGTH_REQUIRED, "Content-Length is required")
            return None
        if not 0 <= length <= MAX_BODY_BYTES:
            self._send_error(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "body too large")
            return None
        try:
            return msgspec.json.decode(self.rfile.read(length))
        except msgspec.DecodeError:
            self._send_error(HTTPStatus.BAD_REQUEST, "the body is not JSON")
            return None

    def _send_file(self, name: str) -> None:
        found = self.server.files.get(name)
        if found is None:
            self._send_error(HTTPStatus.NOT_FOUND, "no such page")
            return
        body, content_type = found
        self._send(HTTPStatus.OK, body, content_type)

    def _send_answer(self, answer: Answer) -> None:
        self._send(answer.status, answer.body, "application/json")

    def _send_error(self, status: HTTPStatus, message: str) -> None:
        self._send(status, message.encode() + b"\n", "text/plain; charset=utf-8")

    def _send(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self._finish_headers(len(body))
        self.wfile.write(body)

    def _finish_headers(self, length: int) -> None:
        self.send_header("Content-Length", str(length))
        for name, value in SECURITY_HEADERS.items():
            self.send_header(name, value)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Requests go to the debug log, not each as a line on stderr."""
        log.debug(format, *args)


# -- memproc ui ----------------------------------------------------------------------------------

STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def run(config: Config, port: int) -> int:
    """Serve until SIGINT or SIGTERM, then finish the requests in progress and exit 0.

    The stop signals are blocked before any thread starts (threads inherit the mask) and the
    main thread waits for one with `sigwait`: no handler runs at an arbitrary moment, so a
    signal can neither interrupt a request nor be missed. The models load before the URL is
    printed, so the page's first search is already hybrid when an embedder is installed
    rather than lexical for a while; the viewer starts no backfill: it writes only when a
    reviewer decides."""
    signal.pthread_sigmask(signal.SIG_BLOCK, STOP_SIGNALS)
    configure_logging(config.log_level)
    if not os.path.isfile(config.db):
        print(f"memproc: no database at {config.db}", file=sys.stderr)
        return 2
    runtime = Runtime(config)
    try:
        runtime.store()
        server = ViewerServer(port, Api(runtime))
    except MemprocError as exc:
        return _failed(runtime, f"{exc.kind}: {exc.message}")
    except OSError as exc:  # the port is taken, or not ours to bind
        return _failed(runtime, f"cannot listen on 127.0.0.1:{port}: {exc.strerror}")
    runtime.models.load_now()
    thread = threading.Thread(target=server.serve_forever, name="memproc-ui")
    thread.start()
    print(f"memproc ui: {config.db} at {server.url}", file=sys.stderr, flush=True)
    signal.sigwait(STOP_SIGNALS)
    server.shutdown()
    thread.join()
    server.server_close()
    runtime.close()
    print("memproc ui: stopped", file=sys.stderr, flush=True)
    return 0


def _failed(runtime: Runtime, message: str) -> int:
    print(f"memproc: {message}", file=sys.stderr)
    runtime.close()
    return 1
